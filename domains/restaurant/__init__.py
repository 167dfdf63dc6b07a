"""Restaurant: a guest orders a meal, course by course, from a waiter."""
