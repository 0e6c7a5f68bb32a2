// Command allocator runs Kubernetes' own DRA allocator
// (k8s.io/dynamic-resource-allocation/structured) on draopt's scenarios.
//
// It reads JSON Lines on stdin, one scenario per line, and writes one JSON line
// per scenario on stdout, flushed after each line so that a caller can stream.
// The allocator is set up the way kube-scheduler's DynamicResources plugin sets
// it up for the scenario's feature gates; see scenario.go and the
// version_k8s_1_*.go files for what differs between releases.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	resourceapi "k8s.io/api/resource/v1"
)

func main() {
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "allocator oracle:", err)
		os.Exit(1)
	}
}

// serve answers every line of in on out, in order.
func serve(in io.Reader, out io.Writer) error {
	reader := bufio.NewReaderSize(in, 1<<20)
	writer := bufio.NewWriter(out)
	encoder := json.NewEncoder(writer)
	encoder.SetEscapeHTML(false)
	for {
		line, readErr := reader.ReadBytes('\n')
		if len(trimSpace(line)) > 0 {
			if err := encoder.Encode(withEmptyLists(answer(line))); err != nil {
				return err
			}
			if err := writer.Flush(); err != nil {
				return err
			}
		}
		if readErr == io.EOF {
			return nil
		}
		if readErr != nil {
			return readErr
		}
	}
}

func trimSpace(b []byte) []byte {
	start, end := 0, len(b)
	for start < end && (b[start] == ' ' || b[start] == '\t' || b[start] == '\r' || b[start] == '\n') {
		start++
	}
	for end > start && (b[end-1] == ' ' || b[end-1] == '\t' || b[end-1] == '\r' || b[end-1] == '\n') {
		end--
	}
	return b[start:end]
}

// answer runs one scenario line; it never panics the whole program.
func answer(line []byte) (out Output) {
	defer func() {
		if r := recover(); r != nil {
			out.Outcome = OutcomeError
			out.Error = fmt.Sprintf("panic: %v", r)
			out.Results = nil
		}
	}()
	sc, err := parseScenario(line)
	if err != nil {
		return Output{Name: sc.Name, Outcome: OutcomeInvalid, Error: err.Error()}
	}
	return run(sc)
}

// withEmptyLists writes absent results and timings as [] rather than null.
func withEmptyLists(out Output) Output {
	if out.Results == nil {
		out.Results = []resourceapi.AllocationResult{}
	}
	if out.Nanos == nil {
		out.Nanos = []int64{}
	}
	return out
}
