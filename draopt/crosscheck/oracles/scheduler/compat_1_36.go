//go:build k8s_1_36

package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

const k8sMinor = "1.36"

// Versions the 1.36 scheduler's informers watch for the kinds whose
// version changed between releases.
var versionedTargets = map[schema.GroupKind]schema.GroupVersion{
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}: {Group: "resource.k8s.io", Version: "v1beta2"},
	{Group: "scheduling.k8s.io", Kind: "PodGroup"}:      {Group: "scheduling.k8s.io", Version: "v1alpha2"},
	{Group: "scheduling.k8s.io", Kind: "Workload"}:      {Group: "scheduling.k8s.io", Version: "v1alpha2"},
}

func newInformerFactory(cs clientset.Interface) informers.SharedInformerFactory {
	return scheduler.NewInformerFactory(cs, 0)
}

// wrapNext reports the pod the scheduler pops (in 1.36 a pod group is
// scheduled from the cycle of one of its pods).
func wrapNext(sched *scheduler.Scheduler, before func(), popped func(keys []string)) {
	next := sched.NextPod
	sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		before()
		pi, err := next(logger)
		var keys []string
		if err == nil && pi != nil && pi.Pod != nil {
			keys = []string{pi.Pod.Namespace + "/" + pi.Pod.Name}
		}
		popped(keys)
		return pi, err
	}
}

// gatingPlugin names the PreEnqueue plugin holding a pending pod back.
func gatingPlugin(sched *scheduler.Scheduler, pod *corev1.Pod) string {
	if pi, ok := sched.SchedulingQueue.GetPod(pod.Name, pod.Namespace); ok && pi != nil {
		return pi.GatingPlugin
	}
	return ""
}

// inQueue: the scheduling queue holds the pod (in any of its pools).
func inQueue(sched *scheduler.Scheduler, pod *corev1.Pod) bool {
	_, ok := sched.SchedulingQueue.GetPod(pod.Name, pod.Namespace)
	return ok
}
