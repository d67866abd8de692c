// SPDX-License-Identifier: LGPL-2.1-or-later
// Package stats: counting primes below n across goroutines.
package stats

import "sync"

func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	for d := 2; d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// CountPrimes counts the primes below n with the range split among workers goroutines.
func CountPrimes(n, workers int) int {
	var wg sync.WaitGroup
	counts := make(chan int, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := 0
			for i := w; i < n; i += workers {
				if isPrime(i) {
					c++
				}
			}
			counts <- c
		}(w)
	}
	wg.Wait()
	close(counts)
	total := 0
	for c := range counts {
		total += c
	}
	return total
}
