// SPDX-License-Identifier: LGPL-2.1-or-later
// pondwl: prints the number of primes below 1000000, counted by 16 goroutines, and runs itself once as a
// child process (os/exec) to check the answer.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"example.org/pondwl/stats"
)

func main() {
	n := stats.CountPrimes(1000000, 16)
	if len(os.Args) > 1 && os.Args[1] == "child" {
		fmt.Println(n)
		return
	}
	out, err := exec.Command(os.Args[0], "child").Output()
	if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(n) {
		fmt.Fprintf(os.Stderr, "child: %v %q\n", err, out)
		os.Exit(1)
	}
	fmt.Printf("primes below 1000000: %d (goroutines and a child process agree)\n", n)
}
