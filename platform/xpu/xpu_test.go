package xpu

import (
	"strings"
	"testing"
)

func TestDumpParsing(t *testing.T) {
	ids := dumpValues("Device ID\n0\n1\n")
	if strings.Join(ids, ",") != "0,1" {
		t.Errorf("dumpValues = %v", ids)
	}
	d, err := firstGPU("Device Name\n\"Intel(R) Data Center GPU Max 1550\"\n\"Intel(R) Data Center GPU Max 1550\"\n")
	if err != nil || d.Name != "Intel(R) Data Center GPU Max 1550" {
		t.Errorf("firstGPU = %+v, %v", d, err)
	}
}
