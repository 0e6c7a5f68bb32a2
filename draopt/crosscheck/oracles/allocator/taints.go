package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
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
	factory := informers.NewSharedInformerFactory(client, 0)
	defer func() {
		cancel() // Shutdown waits for the informers, which stop when ctx is done
		factory.Shutdown()
	}()
	sliceTracker, err := startTracker(ctx, sc, factory)
	if err != nil {
		return nil, err
	}
	defer sliceTracker.Stop()
	factory.Start(ctx.Done())
	// The tracker is synced once its handlers have seen every object of the
	// informers; poll it finely (cache.WaitForCacheSync polls every 100ms).
	for !sliceTracker.HasSynced() {
		select {
		case <-ctx.Done():
			return nil, errors.New("ResourceSlice tracker did not sync")
		case <-time.After(50 * time.Microsecond):
		}
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
