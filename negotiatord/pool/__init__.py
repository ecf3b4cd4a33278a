"""The pool snapshot a cycle negotiates over: slots, idle jobs, autoclusters, the slot table."""
