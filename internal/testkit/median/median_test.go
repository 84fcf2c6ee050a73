package median

import (
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	if got := Mean([]time.Duration{3, 1, 2}); got != 2 {
		t.Errorf("Mean odd = %v", got)
	}
	if got := Mean([]time.Duration{4, 1, 2, 3}); got != 2 { // (2+3)/2 in integer arithmetic
		t.Errorf("Mean even = %v", got)
	}
	if got := Mean([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("Mean even float = %v", got)
	}
	v := []int{3, 1, 2}
	Mean(v)
	if v[0] != 3 {
		t.Error("Mean sorted its input")
	}
	if Mean([]int(nil)) != 0 {
		t.Error("empty input")
	}
}
