//go:build !race

package stage

// RaceEnabled: see race.go.
const RaceEnabled = false
