//go:debug randseednop=0

// Command scheduler is draopt's scheduler oracle: the real kube-scheduler,
// linked as a Go module and run in-process against a fake clientset, placing
// the pods of one JSON document read from stdin. See README.md.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"runtime/debug"
	"strings"
)

// inputDoc is the one JSON document read from stdin.
type inputDoc struct {
	Objects         []json.RawMessage `json:"objects"`
	SchedulerConfig *string           `json:"schedulerConfig"`
	Gates           map[string]bool   `json:"gates"`
	TimeoutSeconds  float64           `json:"timeoutSeconds"`
}

type outPod struct {
	Namespace     string `json:"namespace"`
	Name          string `json:"name"`
	Node          string `json:"node"`
	NominatedNode string `json:"nominatedNode"`
	Message       string `json:"message"`
	Reason        string `json:"reason"`
	Deleted       bool   `json:"deleted,omitempty"`
}

type outAttempt struct {
	Pod     string `json:"pod"`
	Node    string `json:"node"`
	Message string `json:"message"`
	// For a failure: the node the scheduler nominated (preemption).
	NominatedNode string `json:"nominatedNode,omitempty"`
	// For a bind: the nodes that shared the best total score (the scheduler
	// picks one of them at random) and that score; a pod that fitted one
	// node only was not scored.
	BestNodes []string `json:"bestNodes,omitempty"`
	Score     *int64   `json:"score,omitempty"`
	// For a bind: the node came from OpportunisticBatching's hint (the previous
	// pod's scores, not this pod's own; offered only within 500 ms of the wall
	// clock, so this varies between runs).
	Hinted bool `json:"hinted,omitempty"`
}

type outEviction struct {
	Pod           string `json:"pod"`
	Preemptor     string `json:"preemptor"`
	PreemptorKind string `json:"preemptorKind,omitempty"` // Pod or PodGroup
}

type outClaim struct {
	Namespace   string          `json:"namespace"`
	Name        string          `json:"name"`
	Allocation  json.RawMessage `json:"allocation"`
	ReservedFor json.RawMessage `json:"reservedFor"`
}

type outputDoc struct {
	Version   string        `json:"version"`
	Pods      []outPod      `json:"pods"`
	Attempts  []outAttempt  `json:"attempts"`
	Evictions []outEviction `json:"evictions"`
	Claims    []outClaim    `json:"claims"`
	NodeOrder []string      `json:"nodeOrder"`
	Cycles    int           `json:"cycles"`
	Livelock  string        `json:"livelock,omitempty"`
	Error     string        `json:"error"`
}

// refusal is an input the oracle will not run (exit code 2).
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/kubernetes" {
				return strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	return k8sMinor
}

func writeJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
}

func main() {
	// A fixed seed: the scheduler breaks score ties and picks preemption
	// candidate offsets with math/rand (randseednop=0 makes Seed work).
	//nolint:staticcheck
	rand.Seed(1)
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		writeJSON(map[string]string{"error": "reading stdin: " + err.Error()})
		os.Exit(2)
	}
	var in inputDoc
	if err := json.Unmarshal(raw, &in); err != nil {
		writeJSON(map[string]string{"error": "input is not the oracle's JSON document: " + err.Error()})
		os.Exit(2)
	}
	out, err := run(&in)
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			writeJSON(map[string]string{"error": r.msg})
			os.Exit(2)
		}
		if out == nil {
			writeJSON(map[string]string{"error": err.Error()})
			os.Exit(1)
		}
		out.Error = err.Error()
		writeJSON(out)
		os.Exit(1)
	}
	writeJSON(out)
}
