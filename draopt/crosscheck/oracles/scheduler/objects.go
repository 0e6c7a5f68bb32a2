package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/features"

	// The API groups the oracle accepts: their versions, defaults and
	// conversions, as the API server would apply them.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
)

// object is one input object after decoding, defaulting and conversion to
// the version the scheduler's informers watch.
type object struct {
	obj   runtime.Object
	gvk   schema.GroupVersionKind
	gvr   schema.GroupVersionResource
	meta  metav1.Object
	index int // position in the input
}

func (o *object) key() string {
	if o.meta.GetNamespace() == "" {
		return o.gvk.Kind + "/" + o.meta.GetName()
	}
	return o.gvk.Kind + "/" + o.meta.GetNamespace() + "/" + o.meta.GetName()
}

// clusterScoped lists the kinds without a namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PriorityClass": true, "DeviceClass": true,
	"ResourceSlice": true, "DeviceTaintRule": true, "StorageClass": true,
	"CSINode": true, "CSIDriver": true, "PersistentVolume": true, "VolumeAttachment": true,
}

// stableUID derives a UID from an object's identity, for objects given without one.
func stableUID(kind, ns, name string) types.UID {
	sum := sha256.Sum256([]byte(kind + "/" + ns + "/" + name))
	h := fmt.Sprintf("%x", sum[:16])
	return types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}

// builtinPriorityClasses are the classes the API server creates itself.
var builtinPriorityClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

func decodeObjects(raws []json.RawMessage) ([]*object, error) {
	deser := legacyscheme.Codecs.UniversalDeserializer()
	var objs []*object
	seen := map[string]bool{}
	for i, raw := range raws {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, refuse("object %d is not a JSON object: %v", i, err)
		}
		if head.APIVersion == "" || head.Kind == "" {
			return nil, refuse("object %d has no apiVersion or kind", i)
		}
		decoded, gvk, err := deser.Decode(raw, nil, nil)
		if err != nil {
			return nil, refuse("object %d (%s %s): the API would reject it: %v", i, head.APIVersion, head.Kind, err)
		}
		target, ok := targetVersion(gvk.GroupKind())
		if !ok {
			return nil, refuse("object %d: kind %s of %s is not one the scheduler oracle handles", i, gvk.Kind, gvk.GroupVersion())
		}
		legacyscheme.Scheme.Default(decoded)
		obj := decoded
		if gvk.GroupVersion() != target {
			// Versioned types convert through the internal one.
			internal, err := legacyscheme.Scheme.ConvertToVersion(decoded, schema.GroupVersion{Group: target.Group, Version: runtime.APIVersionInternal})
			if err == nil {
				obj, err = legacyscheme.Scheme.ConvertToVersion(internal, target)
			}
			if err != nil {
				return nil, refuse("object %d (%s %s): cannot convert to %s: %v", i, gvk.GroupVersion(), gvk.Kind, target, err)
			}
		}
		tgvk := target.WithKind(gvk.Kind)
		obj.GetObjectKind().SetGroupVersionKind(tgvk)
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, refuse("object %d: %v", i, err)
		}
		if m.GetName() == "" {
			return nil, refuse("object %d (%s): metadata.name is required", i, gvk.Kind)
		}
		if clusterScoped[gvk.Kind] {
			if m.GetNamespace() != "" {
				return nil, refuse("object %d (%s %s) is cluster-scoped but has namespace %q", i, gvk.Kind, m.GetName(), m.GetNamespace())
			}
		} else if m.GetNamespace() == "" {
			m.SetNamespace(metav1.NamespaceDefault)
		}
		if m.GetUID() == "" {
			m.SetUID(stableUID(gvk.Kind, m.GetNamespace(), m.GetName()))
		}
		plural, _ := meta.UnsafeGuessKindToResource(tgvk)
		o := &object{obj: obj, gvk: tgvk, gvr: plural, meta: m, index: i}
		if seen[o.key()] {
			return nil, refuse("object %d: %s appears twice", i, o.key())
		}
		seen[o.key()] = true
		objs = append(objs, o)
	}
	if err := admit(objs); err != nil {
		return nil, err
	}
	return objs, nil
}

// admit does what admission and the API server's own bookkeeping would do
// to the objects before the scheduler sees them: implicit namespaces,
// pod priority from PriorityClasses, owner and reservation UIDs.
func admit(objs []*object) error {
	classes := map[string]*schedulingv1.PriorityClass{}
	var globalDefault *schedulingv1.PriorityClass
	namespaces := map[string]bool{}
	podUIDs := map[string]types.UID{}
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *schedulingv1.PriorityClass:
			classes[x.Name] = x
			if x.GlobalDefault && (globalDefault == nil || x.Value > globalDefault.Value) {
				globalDefault = x
			}
		case *corev1.Namespace:
			namespaces[x.Name] = true
			if x.Labels == nil {
				x.Labels = map[string]string{}
			}
			x.Labels[corev1.LabelMetadataName] = x.Name
		case *corev1.Pod:
			podUIDs[x.Namespace+"/"+x.Name] = x.UID
		}
	}
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *corev1.Pod:
			name, value, policy, err := establishPriority(x.Spec.PriorityClassName, classes, globalDefault)
			if err != nil {
				return refuse("pod %s/%s: %v (the API would reject the pod)", x.Namespace, x.Name, err)
			}
			if x.Spec.Priority != nil && *x.Spec.Priority != value {
				return refuse("pod %s/%s: spec.priority %d differs from %d of its PriorityClass (the API would reject the pod)",
					x.Namespace, x.Name, *x.Spec.Priority, value)
			}
			x.Spec.PriorityClassName, x.Spec.Priority = name, &value
			if x.Spec.PreemptionPolicy == nil {
				x.Spec.PreemptionPolicy = &policy
			}
			fillOwnerUIDs(x.OwnerReferences, podUIDs, x.Namespace)
			if x.Spec.NodeName != "" && x.Status.StartTime == nil {
				// The kubelet sets startTime on every pod it starts; without
				// one, kube-scheduler reads the wall clock for the pod's start
				// (preemption's last tie-breaks), so the result would vary.
				x.Status.StartTime = &metav1.Time{Time: clockStart.Add(-time.Hour + time.Duration(o.index)*time.Second)}
			}
		default:
			if o.gvk.Group == "scheduling.k8s.io" && (o.gvk.Kind == "PodGroup" || o.gvk.Kind == "CompositePodGroup") {
				if err := admitGroupPriority(o, classes, globalDefault); err != nil {
					return err
				}
			}
		case *resourcev1.ResourceClaim:
			fillOwnerUIDs(x.OwnerReferences, podUIDs, x.Namespace)
			for i := range x.Status.ReservedFor {
				r := &x.Status.ReservedFor[i]
				if r.UID == "" && r.Resource == "pods" {
					r.UID = podUIDs[x.Namespace+"/"+r.Name]
				}
			}
		}
	}
	return nil
}

func fillOwnerUIDs(refs []metav1.OwnerReference, podUIDs map[string]types.UID, ns string) {
	for i := range refs {
		if refs[i].UID == "" && refs[i].Kind == "Pod" {
			refs[i].UID = podUIDs[ns+"/"+refs[i].Name]
		}
	}
}

// implicitNamespaces returns Namespace objects for namespaces that objects
// use but the input does not define.
func implicitNamespaces(objs []*object) []*object {
	have := map[string]bool{}
	want := map[string]bool{}
	for _, o := range objs {
		if ns, ok := o.obj.(*corev1.Namespace); ok {
			have[ns.Name] = true
		} else if o.meta.GetNamespace() != "" {
			want[o.meta.GetNamespace()] = true
		}
	}
	var names []string
	for n := range want {
		if !have[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var out []*object
	for _, n := range names {
		ns := &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{
				Name: n, UID: stableUID("Namespace", "", n),
				Labels: map[string]string{corev1.LabelMetadataName: n},
			},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}
		out = append(out, &object{
			obj: ns, gvk: corev1.SchemeGroupVersion.WithKind("Namespace"),
			gvr: corev1.SchemeGroupVersion.WithResource("namespaces"), meta: ns, index: -1,
		})
	}
	return out
}

// creationRank orders the kinds the way the oracle creates them.
func creationRank(o *object) int {
	switch o.gvk.Kind {
	case "Namespace":
		return 0
	case "PriorityClass":
		return 1
	case "DeviceClass", "StorageClass", "CSIDriver":
		return 2
	case "DeviceTaintRule":
		return 3
	case "ResourceSlice":
		return 4
	case "Node":
		return 5
	case "CSINode", "PersistentVolume":
		return 6
	case "Pod":
		if p := o.obj.(*corev1.Pod); p.Spec.NodeName != "" {
			return 10
		}
		return 11
	case "ResourceClaim", "ResourceClaimTemplate", "PersistentVolumeClaim":
		return 9
	default: // pod groups, workloads, disruption budgets ...
		return 8
	}
}

// creationOrder sorts objects: by kind rank; cluster-scoped infrastructure
// (namespaces, classes, slices, nodes) by name; the rest in input order.
func creationOrder(objs []*object) []*object {
	out := append([]*object(nil), objs...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := creationRank(out[i]), creationRank(out[j])
		if ri != rj {
			return ri < rj
		}
		if ri <= 6 {
			return out[i].meta.GetName() < out[j].meta.GetName()
		}
		return out[i].index < out[j].index
	})
	return out
}

// targetVersion is the version the scheduler's informers use for a kind.
func targetVersion(gk schema.GroupKind) (schema.GroupVersion, bool) {
	if gv, ok := versionedTargets[gk]; ok {
		return gv, true
	}
	switch gk.Group {
	case "":
		switch gk.Kind {
		case "Pod", "Node", "Namespace", "PersistentVolume", "PersistentVolumeClaim", "Service", "ReplicationController":
			return corev1.SchemeGroupVersion, true
		}
	case "apps":
		// default spreading reads the selectors of a pod's owners (helper.DefaultSelector)
		switch gk.Kind {
		case "ReplicaSet", "StatefulSet":
			return schema.GroupVersion{Group: "apps", Version: "v1"}, true
		}
	case "resource.k8s.io":
		switch gk.Kind {
		case "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceClass":
			return resourcev1.SchemeGroupVersion, true
		}
	case "scheduling.k8s.io":
		if gk.Kind == "PriorityClass" {
			return schedulingv1.SchemeGroupVersion, true
		}
	case "policy":
		if gk.Kind == "PodDisruptionBudget" {
			return schema.GroupVersion{Group: "policy", Version: "v1"}, true
		}
	case "storage.k8s.io":
		switch gk.Kind {
		case "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "VolumeAttachment":
			return schema.GroupVersion{Group: "storage.k8s.io", Version: "v1"}, true
		}
	}
	return schema.GroupVersion{}, false
}

// establishPriority resolves a PriorityClass name as the Priority admission
// plugin does: the class's value and preemption policy; without a name the
// global default class, else 0.
func establishPriority(className string, classes map[string]*schedulingv1.PriorityClass, globalDefault *schedulingv1.PriorityClass) (string, int32, corev1.PreemptionPolicy, error) {
	policy := corev1.PreemptLowerPriority
	if className == "" {
		if globalDefault == nil {
			return "", 0, policy, nil
		}
		className = globalDefault.Name
	}
	if pc, ok := classes[className]; ok {
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
		return className, pc.Value, policy, nil
	}
	if v, ok := builtinPriorityClasses[className]; ok {
		return className, v, policy, nil
	}
	return "", 0, policy, fmt.Errorf("no PriorityClass %q", className)
}

// admitGroupPriority sets a PodGroup's or CompositePodGroup's spec.priority
// (and, with PodGroupPreemptionPolicy, spec.preemptionPolicy) from its
// PriorityClass, as the Priority admission plugin does when GenericWorkload
// is on. The types differ between releases: edited as unstructured data.
func admitGroupPriority(o *object, classes map[string]*schedulingv1.PriorityClass, globalDefault *schedulingv1.PriorityClass) error {
	if !utilfeature.DefaultFeatureGate.Enabled(features.GenericWorkload) {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
	if err != nil {
		return err
	}
	className, _, _ := unstructured.NestedString(u, "spec", "priorityClassName")
	name, value, policy, err := establishPriority(className, classes, globalDefault)
	if err != nil {
		return refuse("%s: %v (the API would reject it)", o.key(), err)
	}
	if have, found, _ := unstructured.NestedInt64(u, "spec", "priority"); found && have != int64(value) {
		return refuse("%s: spec.priority %d differs from %d of its PriorityClass (the API would reject it)", o.key(), have, value)
	}
	_ = unstructured.SetNestedField(u, int64(value), "spec", "priority")
	if name != "" {
		_ = unstructured.SetNestedField(u, name, "spec", "priorityClassName")
	}
	if gateOn("PodGroupPreemptionPolicy") && o.gvk.Kind == "PodGroup" {
		if _, found, _ := unstructured.NestedString(u, "spec", "preemptionPolicy"); !found {
			_ = unstructured.SetNestedField(u, string(policy), "spec", "preemptionPolicy")
		}
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, o.obj)
}

// gateOn: a gate that may not exist in every release (false where it does not).
func gateOn(name string) bool {
	gate := featuregate.Feature(name)
	if _, known := utilfeature.DefaultMutableFeatureGate.GetAll()[gate]; !known {
		return false
	}
	return utilfeature.DefaultFeatureGate.Enabled(gate)
}
