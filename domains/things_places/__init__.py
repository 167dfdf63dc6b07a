"""Things-places: before going away, an owner tells a house sitter which thing is in each of
fifteen places of the house. Many slots, each value an arbitrary thing: a long dialogue."""
