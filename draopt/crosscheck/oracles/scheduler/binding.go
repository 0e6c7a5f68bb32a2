package main

import (
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bindingConditionsPlugin is the plugin whose PreBind waits for the conditions.
const bindingConditionsPlugin = "DynamicResources"

// awaitingBindingConditions lists the pods ("ns/name" -> node) whose binding
// cycle waits in the DRA PreBind for device binding conditions: a claim
// reserved for the pod holds a device with binding conditions not yet true.
// A driver sets them in a cluster; none runs here, so only the plugin's
// binding timeout would end the wait. The scheduler has chosen the node.
func (o *oracle) awaitingBindingConditions() map[string]string {
	out := map[string]string{}
	list, err := o.tracker.List(claimsGVR, resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"), "")
	if err != nil {
		return out
	}
	for _, claim := range list.(*resourcev1.ResourceClaimList).Items {
		if !bindingConditionsPending(&claim) {
			continue
		}
		for _, ref := range claim.Status.ReservedFor {
			if ref.Resource != "pods" {
				continue
			}
			got, err := o.tracker.Get(podsGVR, claim.Namespace, ref.Name)
			if err != nil {
				continue
			}
			pod := got.(*corev1.Pod)
			if assumed, _ := o.sched.Cache.IsAssumedPod(pod); !assumed {
				continue
			}
			if cached, err := o.sched.Cache.GetPod(pod); err == nil && cached.Spec.NodeName != "" {
				out[pod.Namespace+"/"+pod.Name] = cached.Spec.NodeName
			}
		}
	}
	return out
}

// bindingConditionsPending: an allocated device of the claim has a binding
// condition its status does not yet report as true.
func bindingConditionsPending(claim *resourcev1.ResourceClaim) bool {
	if claim.Status.Allocation == nil {
		return false
	}
	for _, result := range claim.Status.Allocation.Devices.Results {
		for _, condition := range result.BindingConditions {
			if !deviceConditionTrue(claim, result, condition) {
				return true
			}
		}
	}
	return false
}

func deviceConditionTrue(claim *resourcev1.ResourceClaim, result resourcev1.DeviceRequestAllocationResult, condition string) bool {
	for _, device := range claim.Status.Devices {
		if device.Driver == result.Driver && device.Pool == result.Pool && device.Device == result.Device {
			for _, c := range device.Conditions {
				if c.Type == condition && c.Status == metav1.ConditionTrue {
					return true
				}
			}
		}
	}
	return false
}

// parkedOnly: every pod in flight is parked at Permit or waits for binding
// conditions; only another pod's cycle or a driver moves it on.
func parkedOnly(inFlight []*corev1.Pod, waiting map[string][]string, awaiting map[string]string) bool {
	for _, pod := range inFlight {
		key := pod.Namespace + "/" + pod.Name
		_, parked := waiting[key]
		_, bound := awaiting[key]
		if !parked && !bound {
			return false
		}
	}
	return true
}
