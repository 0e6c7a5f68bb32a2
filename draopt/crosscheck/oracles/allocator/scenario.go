package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// Outcomes, as draopt's crosscheck reads them.
const (
	OutcomeAllocated     = "allocated"
	OutcomeUnschedulable = "unschedulable"
	OutcomeError         = "error"
	OutcomeTimeout       = "timeout"
	OutcomeInvalid       = "invalid"
)

// Output is the answer for one scenario.
type Output struct {
	Name    string                         `json:"name"`
	Outcome string                         `json:"outcome"`
	Results []resourceapi.AllocationResult `json:"results"`
	Error   string                         `json:"error"`
	Nanos   []int64                        `json:"nanos"`
	// Allocator names the variant that ran: stable, incubating or experimental.
	Allocator string `json:"allocator,omitempty"`
}

// rawScenario is one input line before the objects are typed.
type rawScenario struct {
	Name           string            `json:"name"`
	Gates          map[string]bool   `json:"gates"`
	Node           *v1.Node          `json:"node"`
	Objects        []json.RawMessage `json:"objects"`
	Claims         []json.RawMessage `json:"claims"`
	Repeat         int               `json:"repeat"`
	TimeoutSeconds float64           `json:"timeoutSeconds"`
	Allocators     []string          `json:"allocators"`
}

// Scenario is one allocation on one node.
type Scenario struct {
	Name           string
	Gates          map[string]bool // a gate not given is off
	Node           *v1.Node
	Classes        []*resourceapi.DeviceClass
	Slices         []*resourceapi.ResourceSlice
	TaintRules     []json.RawMessage // decoded per release: the served version differs
	InUse          []*resourceapi.ResourceClaim
	Claims         []*resourceapi.ResourceClaim
	Repeat         int
	TimeoutSeconds float64
	// Allocators, when given, limits the variants NewAllocator may pick (the
	// scheduler's choice otherwise). The stable variant visits pools in Go map
	// order, which is random; pinning ["incubating", "experimental"] gives the
	// same search in pool-ID order.
	Allocators []string
}

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func parseScenario(line []byte) (Scenario, error) {
	var raw rawScenario
	if err := json.Unmarshal(line, &raw); err != nil {
		// Keep the name when the line is JSON at all, so the caller can match the answer.
		var named struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(line, &named)
		return Scenario{Name: named.Name}, fmt.Errorf("not a scenario: %w", err)
	}
	sc := Scenario{
		Name:           raw.Name,
		Gates:          raw.Gates,
		Node:           raw.Node,
		Repeat:         raw.Repeat,
		TimeoutSeconds: raw.TimeoutSeconds,
		Allocators:     raw.Allocators,
	}
	if sc.Node == nil {
		return sc, errors.New("node: missing")
	}
	if sc.Repeat <= 0 {
		sc.Repeat = 1
	}
	if sc.TimeoutSeconds <= 0 {
		sc.TimeoutSeconds = 10
	}
	for i, obj := range raw.Objects {
		if err := sc.addObject(obj); err != nil {
			return sc, fmt.Errorf("objects[%d]: %w", i, err)
		}
	}
	for i, obj := range raw.Claims {
		claim, err := decodeClaim(obj)
		if err != nil {
			return sc, fmt.Errorf("claims[%d]: %w", i, err)
		}
		sc.Claims = append(sc.Claims, claim)
	}
	if len(sc.Claims) == 0 {
		return sc, errors.New("claims: none to allocate")
	}
	return sc, nil
}

func (sc *Scenario) addObject(obj json.RawMessage) error {
	var meta typeMeta
	if err := json.Unmarshal(obj, &meta); err != nil {
		return err
	}
	if meta.Kind != "DeviceTaintRule" && meta.APIVersion != "resource.k8s.io/v1" {
		// draopt hands objects over as v1; other versions would need conversion.
		return fmt.Errorf("%s: apiVersion %q is not resource.k8s.io/v1", meta.Kind, meta.APIVersion)
	}
	switch meta.Kind {
	case "DeviceClass":
		class := &resourceapi.DeviceClass{}
		if err := json.Unmarshal(obj, class); err != nil {
			return err
		}
		sc.Classes = append(sc.Classes, class)
	case "ResourceSlice":
		slice := &resourceapi.ResourceSlice{}
		if err := json.Unmarshal(obj, slice); err != nil {
			return err
		}
		sc.Slices = append(sc.Slices, slice)
	case "DeviceTaintRule":
		if !strings.HasPrefix(meta.APIVersion, "resource.k8s.io/") {
			return fmt.Errorf("DeviceTaintRule: apiVersion %q", meta.APIVersion)
		}
		sc.TaintRules = append(sc.TaintRules, obj)
	case "ResourceClaim":
		claim, err := decodeClaim(obj)
		if err != nil {
			return err
		}
		if claim.Status.Allocation == nil {
			return fmt.Errorf("ResourceClaim %s/%s: in the objects but not allocated (claims to allocate go in claims)", claim.Namespace, claim.Name)
		}
		sc.InUse = append(sc.InUse, claim)
	default:
		return fmt.Errorf("unsupported kind %q", meta.Kind)
	}
	return nil
}

func decodeClaim(obj json.RawMessage) (*resourceapi.ResourceClaim, error) {
	claim := &resourceapi.ResourceClaim{}
	if err := json.Unmarshal(obj, claim); err != nil {
		return nil, err
	}
	if claim.Namespace == "" {
		claim.Namespace = "default"
	}
	return claim, nil
}

func (sc *Scenario) gate(name string) bool {
	return sc.Gates[name]
}
