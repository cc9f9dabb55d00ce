"""Front end: a task source traced to an fx graph with full-size shapes on the meta device."""
