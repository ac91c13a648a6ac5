package fdbstore

// PersistCheck is the persistence's part of Check alone, for the external
// tests of the persistence driver.
var PersistCheck = (*Persistence).check
