package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"
)

// classLister serves the scenario's DeviceClasses; a missing one is NotFound,
// as the scheduler's informer-backed lister reports it.
type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	classes := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, class := range l {
		classes = append(classes, class)
	}
	return classes, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if class, ok := l[name]; ok {
		return class, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// run allocates the scenario's claims on its node, sc.Repeat times.
func run(sc Scenario) Output {
	out := Output{Name: sc.Name}
	classes := classLister{}
	for _, class := range sc.Classes {
		classes[class.Name] = class
	}
	if outcome, msg := preFilter(sc, classes); outcome != "" {
		out.Outcome, out.Error = outcome, msg
		return out
	}
	ctx := context.Background()
	slices, err := patchedSlices(ctx, sc)
	if err != nil {
		out.Outcome, out.Error = OutcomeError, fmt.Sprintf("applying DeviceTaintRules: %v", err)
		return out
	}
	state := allocatedState(sc)
	features := allocatorFeatures(sc)
	// The plugin's LRU cache of compiled CEL expressions, kept across the repeats as the
	// scheduler keeps it across scheduling cycles.
	celCache := cel.NewCache(10, cel.Features{
		EnableConsumableCapacity: sc.gate("DRAConsumableCapacity"),
		EnableListTypeAttributes: sc.gate("DRAListTypeAttributes"),
	})
	timeout := time.Duration(sc.TimeoutSeconds * float64(time.Second))
	structured.EnableAllocators(sc.Allocators...)
	defer structured.EnableAllocators()
	for i := 0; i < sc.Repeat; i++ {
		out.Results, out.Outcome, out.Error = nil, "", ""
		runCtx, cancel := context.WithTimeout(ctx, timeout)
		start := time.Now()
		allocator, err := structured.NewAllocator(runCtx, features, state, classes, slices, celCache)
		var results []resourceapi.AllocationResult
		if err == nil {
			results, err = allocator.Allocate(runCtx, sc.Node, sc.Claims)
			out.Allocator = variantName(allocator)
		}
		out.Nanos = append(out.Nanos, time.Since(start).Nanoseconds())
		cancel()
		// The plugin's Filter maps the allocator's answer to a status this way.
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			out.Outcome, out.Error = OutcomeTimeout, fmt.Sprintf("timed out trying to allocate devices: %v", err)
		case errors.Is(err, structured.ErrFailedAllocationOnNode):
			out.Outcome, out.Error = OutcomeUnschedulable, err.Error()
		case err != nil:
			out.Outcome, out.Error = OutcomeError, err.Error()
		case len(results) != len(sc.Claims):
			out.Outcome, out.Error = OutcomeUnschedulable, "cannot allocate all claims"
		default:
			out.Outcome, out.Results = OutcomeAllocated, results
		}
	}
	return out
}

// preFilter checks what the plugin's PreFilter checks of claims to allocate
// before any node is tried: each request names a class (else an error), the
// class exists and subrequests come only with DRAPrioritizedList (else the
// pod is unschedulable). It returns the outcome and message of a failure.
func preFilter(sc Scenario, classes classLister) (string, string) {
	for _, claim := range sc.Claims {
		for _, request := range claim.Spec.Devices.Requests {
			switch {
			case request.Exactly != nil:
				if outcome, msg := validateClass(classes, request.Exactly.DeviceClassName, request.Name); outcome != "" {
					return outcome, msg
				}
			case len(request.FirstAvailable) > 0:
				if !sc.gate("DRAPrioritizedList") {
					return OutcomeUnschedulable, fmt.Sprintf("resource claim %s/%s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled", claim.Namespace, claim.Name, request.Name)
				}
				for _, sub := range request.FirstAvailable {
					name := strings.Join([]string{request.Name, sub.Name}, "/")
					if outcome, msg := validateClass(classes, sub.DeviceClassName, name); outcome != "" {
						return outcome, msg
					}
				}
			default:
				return OutcomeUnschedulable, fmt.Sprintf("resource claim %s/%s, request %s: unknown request type", claim.Namespace, claim.Name, request.Name)
			}
		}
	}
	return "", ""
}

func validateClass(classes classLister, className, requestName string) (string, string) {
	if className == "" {
		return OutcomeError, fmt.Sprintf("request %s: unsupported request type", requestName)
	}
	if _, ok := classes[className]; !ok {
		return OutcomeUnschedulable, fmt.Sprintf("request %s: device class %s does not exist", requestName, className)
	}
	return "", ""
}

// allocatedState gathers what the in-use claims hold, as the scheduler's DRA
// manager does: with DRAConsumableCapacity, results with a shareID are shared
// (their consumed capacity added up) and the others dedicated; without it,
// every device is dedicated. Admin-access results hold nothing.
func allocatedState(sc Scenario) structured.AllocatedState {
	consumable := sc.gate("DRAConsumableCapacity")
	state := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	for _, claim := range sc.InUse {
		for _, result := range claim.Status.Allocation.Devices.Results {
			if ptr.Deref(result.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(result.Driver, result.Pool, result.Device)
			if consumable && result.ShareID != nil {
				state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, result.ShareID))
				if result.ConsumedCapacity != nil {
					state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, result.ConsumedCapacity))
				}
				continue
			}
			state.AllocatedDevices.Insert(id)
		}
	}
	return state
}

// variantName tells which allocator variant NewAllocator picked, from its
// package name (the variants are internal packages).
func variantName(allocator structured.Allocator) string {
	name := strings.TrimPrefix(fmt.Sprintf("%T", allocator), "*")
	name, _, _ = strings.Cut(name, ".")
	return name
}
