package zke

import (
	"reflect"
	"strings"
	"testing"
)

const sampleProbe = `@@os
Linux
x86_64
@@mem
MemTotal:       24604248 kB
@@disk
/dev/vda       263174212 12000000 83000000  13% /
@@swap
0
@@time
1795000000
@@caps
CapBnd:	000001fffeffffff
@@tcp
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0951 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1A0A 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
@@end
`

func TestParsePreflight(t *testing.T) {
	f, err := parsePreflight(sampleProbe)
	if err != nil {
		t.Fatal(err)
	}
	want := probeFacts{
		OS: "Linux", Arch: "x86_64", MemTotalKiB: 24604248, DiskFreeKiB: 83000000, SwapDevices: 0,
		EpochSeconds: 1795000000, CapBnd: 0x000001fffeffffff,
		Listening: map[int]bool{22: true, 6666: true},
	}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("parsed %+v\nwant   %+v", f, want)
	}
	if _, err := parsePreflight(strings.Replace(sampleProbe, "@@end\n", "", 1)); err == nil {
		t.Error("incomplete output accepted")
	}
	if _, err := parsePreflight(strings.Replace(sampleProbe, "24604248", "lots", 1)); err == nil || !strings.Contains(err.Error(), "mem") {
		t.Errorf("bad number: %v", err)
	}
}

func TestMissingCaps(t *testing.T) {
	cases := []struct {
		bnd  uint64
		want []string
	}{
		{0x000001ffffffffff, nil},
		{0x000001fffeffffff, []string{"SYS_RESOURCE"}},
		{0x000001fffefffffe, []string{"CHOWN", "SYS_RESOURCE"}},
		{0, nil},
	}
	for _, tc := range cases {
		if got := missingCaps(tc.bnd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("missingCaps(%x) = %v, want %v", tc.bnd, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got := shellQuote(`/a b/'c'`); got != `'/a b/'\''c'\'''` {
		t.Errorf("shellQuote: %s", got)
	}
}
