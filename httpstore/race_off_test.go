//go:build !race

package httpstore_test

const raceEnabled = false
