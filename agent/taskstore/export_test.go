package taskstore

// CheckCounters is checkCounters for the package's external tests: the
// contract runs there (agent/taskstore/storetest imports this package).
var CheckCounters = checkCounters
