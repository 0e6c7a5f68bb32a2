package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// patchedSlices returns the slices as the scheduler's DRA manager lists them:
// with DRADeviceTaintRules, through the release's ResourceSlice tracker, which
// adds each matching DeviceTaintRule's taint to the devices. The tracker runs
// on informers of a fake clientset holding the scenario's objects.
func patchedSlices(ctx context.Context, sc Scenario) ([]*resourceapi.ResourceSlice, error) {
	if !sc.gate("DRADeviceTaintRules") || len(sc.TaintRules) == 0 {
		// Without rules the tracker hands the slices over unchanged.
		return sc.Slices, nil
	}
	objects, err := trackerObjects(sc)
	if err != nil {
		return nil, err
	}
	for _, slice := range sc.Slices {
		objects = append(objects, slice.DeepCopy())
	}
	client := fake.NewClientset(objects...)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	sliceTracker, err := startTracker(ctx, sc, factory)
	if err != nil {
		return nil, err
	}
	defer sliceTracker.Stop()
	factory.Start(ctx.Done())
	for informerType, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return nil, fmt.Errorf("informer for %v did not sync", informerType)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), sliceTracker.HasSynced) {
		return nil, errors.New("ResourceSlice tracker did not sync")
	}
	slices, err := sliceTracker.ListPatchedResourceSlices()
	if err != nil {
		return nil, err
	}
	if len(slices) != len(sc.Slices) {
		return nil, fmt.Errorf("tracker lists %d ResourceSlices, the scenario has %d (duplicate names?)", len(slices), len(sc.Slices))
	}
	return slices, nil
}
