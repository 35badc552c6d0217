package stage

import (
	"reflect"
	"testing"
)

func TestSpecRoundTrip(t *testing.T) {
	for _, s := range []Spec{
		{},
		{Probe: true, Namespaces: true, PrivateNetwork: true},
		{
			Path: "/proc/self/fd/9", Args: []string{"plugin", "", "a b"}, Env: []string{"A=1", "B="}, Dir: "/work",
			Files: 2, Exec: true, Namespaces: true,
			Limits:     Limits{Memory: 4 << 30, Processes: 2048, FileSize: 8 << 30},
			Filter:     []byte{0x20, 0, 0, 0, 4, 0, 0, 0},
			EtcSecrets: []string{"/etc/shadow", "/etc/ssl/private"},
			ProcRules:  []ProcRule{{Path: "/proc", DirRights: 12, FileRights: 4}},
		},
	} {
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Spec
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, s)
		}
		// Every truncation, and anything after the end, is refused.
		for n := range len(b) {
			if err := new(Spec).UnmarshalBinary(b[:n]); err == nil {
				t.Errorf("%+v cut to %d bytes: decoded", s, n)
			}
		}
		if err := new(Spec).UnmarshalBinary(append(b, 0)); err == nil {
			t.Errorf("%+v with a byte more: decoded", s)
		}
	}
}

// A length beyond what is left is refused without allocating it.
func TestSpecRefusesHugeLengths(t *testing.T) {
	b := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	if err := new(Spec).UnmarshalBinary(b); err == nil {
		t.Fatal("decoded")
	}
}
