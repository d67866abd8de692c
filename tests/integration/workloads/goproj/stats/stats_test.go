// SPDX-License-Identifier: LGPL-2.1-or-later
package stats

import "testing"

func TestCountPrimes(t *testing.T) {
	for _, w := range []int{1, 2, 8, 64} {
		if got := CountPrimes(100000, w); got != 9592 {
			t.Errorf("CountPrimes(100000, %d) = %d, want 9592", w, got)
		}
	}
}

func TestParallel(t *testing.T) {
	for i := 0; i < 8; i++ {
		t.Run("p", func(t *testing.T) {
			t.Parallel()
			if got := CountPrimes(10000, 4); got != 1229 {
				t.Errorf("got %d", got)
			}
		})
	}
}
