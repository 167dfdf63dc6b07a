"""Travel booking: a customer tells a travel agent about the trip they want to book."""
