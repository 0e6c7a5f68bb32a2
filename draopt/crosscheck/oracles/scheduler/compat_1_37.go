//go:build k8s_1_37 || !k8s_1_36

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

const k8sMinor = "1.37"

// Versions the 1.37 scheduler's informers watch for the kinds whose
// version changed between releases.
var versionedTargets = map[schema.GroupKind]schema.GroupVersion{
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:     {Group: "resource.k8s.io", Version: "v1"},
	{Group: "scheduling.k8s.io", Kind: "PodGroup"}:          {Group: "scheduling.k8s.io", Version: "v1beta1"},
	{Group: "scheduling.k8s.io", Kind: "CompositePodGroup"}: {Group: "scheduling.k8s.io", Version: "v1alpha3"},
	{Group: "scheduling.k8s.io", Kind: "Workload"}:          {Group: "scheduling.k8s.io", Version: "v1beta1"},
}

func newInformerFactory(cs clientset.Interface) informers.SharedInformerFactory {
	return scheduler.NewInformerFactory(cs, 0, nil)
}

// wrapNext reports the pods of every entity the scheduler pops.
func wrapNext(sched *scheduler.Scheduler, before func(), popped func(keys []string)) {
	next := sched.NextEntity
	sched.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		before()
		e, err := next(logger)
		var keys []string
		if err == nil && e != nil {
			switch x := e.(type) {
			case *framework.QueuedPodInfo:
				if x.Pod != nil {
					keys = append(keys, x.Pod.Namespace+"/"+x.Pod.Name)
				}
			case *framework.QueuedPodGroupInfo:
				x.ForEachPodInfo(func(p *framework.QueuedPodInfo) bool {
					keys = append(keys, p.Pod.Namespace+"/"+p.Pod.Name)
					return true
				})
			}
		}
		popped(keys)
		return e, err
	}
}

// gatingPlugin names the PreEnqueue plugin holding a pending pod back.
func gatingPlugin(sched *scheduler.Scheduler, pod *corev1.Pod) string {
	if pi, ok := sched.SchedulingQueue.GetPod(pod.Name, pod.Namespace, pod.Spec.SchedulingGroup); ok && pi != nil {
		return pi.GatingPlugin
	}
	return ""
}

// inQueue: the scheduling queue holds the pod (in any of its pools).
func inQueue(sched *scheduler.Scheduler, pod *corev1.Pod) bool {
	_, ok := sched.SchedulingQueue.GetPod(pod.Name, pod.Namespace, pod.Spec.SchedulingGroup)
	return ok
}
