package driver

import "github.com/ckptstore/ckptstore/contract"

// The checker's types are the contract core's, shared by every contract
// and engine, so that one Check reports the problems of all of them.
type (
	// Checker is a store that can verify its own stored state
	// (contract.Checker); fdbstore and redisstore implement it.
	Checker = contract.Checker
	// CheckProgress is how far a check has read (contract.CheckProgress).
	CheckProgress = contract.CheckProgress
	// ProgressChecker is a Checker that reports its progress
	// (contract.ProgressChecker).
	ProgressChecker = contract.ProgressChecker
	// Problem is one broken invariant, an error wrapping ErrCorrupt
	// (contract.Problem).
	Problem = contract.Problem
)
