//go:build k8s_1_37

package main

import (
	"context"
	"encoding/json"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/dynamic-resource-allocation/structured"
)

// release names the Kubernetes release this build links.
const release = "1.37"

// allocatorFeatures maps gates to allocator features as the 1.37 plugin's
// AllocatorFeatures does.
func allocatorFeatures(sc Scenario) structured.Features {
	return structured.Features{
		AdminAccess:             sc.gate("DRAAdminAccess"),
		PrioritizedList:         sc.gate("DRAPrioritizedList"),
		PartitionableDevices:    sc.gate("DRAPartitionableDevices"),
		DeviceTaints:            sc.gate("DRADeviceTaints"),
		DeviceBindingAndStatus:  sc.gate("DRADeviceBindingConditions") && sc.gate("DRAResourceClaimDeviceStatus"),
		ConsumableCapacity:      sc.gate("DRAConsumableCapacity"),
		FractionalCapacityRange: sc.gate("DRAFractionalCapacityRange"),
		ListTypeAttributes:      sc.gate("DRAListTypeAttributes"),
		OptionalNodeOperations:  sc.gate("DRAOptionalNodeOperations"),
		DerivedAttributes:       sc.gate("DRADerivedAttributes"),
		CompatibilityGroups:     sc.gate("DRADeviceCompatibilityGroups"),
	}
}

// trackerObjects types the DeviceTaintRules as 1.37 serves them (resource.k8s.io/v1).
func trackerObjects(sc Scenario) ([]runtime.Object, error) {
	var objects []runtime.Object
	for _, raw := range sc.TaintRules {
		rule := &resourceapi.DeviceTaintRule{}
		if err := json.Unmarshal(raw, rule); err != nil {
			return nil, err
		}
		objects = append(objects, rule)
	}
	return objects, nil
}

func startTracker(ctx context.Context, sc Scenario, factory informers.SharedInformerFactory) (*tracker.Tracker, error) {
	return tracker.StartTracker(ctx, tracker.Options{
		EnableDeviceTaintRules:   true,
		EnableConsumableCapacity: sc.gate("DRAConsumableCapacity"),
		SliceInformer:            factory.Resource().V1().ResourceSlices(),
		TaintInformer:            factory.Resource().V1().DeviceTaintRules(),
	})
}
