package ckptstore

// FullStore is a store with every optional capability: what fdbstore,
// redisstore, memstore and the httpstore client implement. It names the
// whole set once, so that each of them asserts it with one line, and a
// capability added here is one that every full store must then implement
// (the build says which do not).
type FullStore interface {
	Store
	Pruner
	Forker
	LeaseKeeper
	Transcripts
	ThreadDeleter
	Pager
	ThreadLister
	Importer
}
