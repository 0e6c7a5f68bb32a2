package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	testingclock "k8s.io/utils/clock/testing"
)

// clockStart is the scheduler's (fake) clock at the start of every run.
var clockStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
var claimsGVR = resourcev1.SchemeGroupVersion.WithResource("resourceclaims")

// rvTracker stamps a growing resourceVersion on every object written, as
// the API server does (the fake tracker leaves it empty; the scheduler's
// assume caches need it), and counts what is written per resource.
type rvTracker struct {
	clienttesting.ObjectTracker
	mu      sync.Mutex
	rv      int64
	written map[schema.GroupVersionResource]int64
	deletes map[string]bool // "resource/ns/name" deleted but not yet seen by an informer
	// preemptors: UIDs of the pods and pod groups written, in order; any of
	// them may start an asynchronous preemption
	preemptors []types.UID
	known      map[types.UID]bool
}

func (t *rvTracker) stamp(gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	t.rv++
	m.SetResourceVersion(strconv.FormatInt(t.rv, 10))
	t.written[gvr] = t.rv
	return obj, nil
}

func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj, err := t.stamp(gvr, obj)
	if err != nil {
		return err
	}
	if gvr.Resource == "pods" || gvr.Resource == "podgroups" {
		if m, err := meta.Accessor(obj); err == nil && m.GetUID() != "" && !t.known[m.GetUID()] {
			t.known[m.GetUID()] = true
			t.preemptors = append(t.preemptors, m.GetUID())
		}
	}
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj, err := t.stamp(gvr, obj)
	if err != nil {
		return err
	}
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	obj, err := t.stamp(gvr, obj)
	if err != nil {
		return err
	}
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

func (t *rvTracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.ObjectTracker.Delete(gvr, ns, name, opts...)
	if err == nil {
		t.deletes[gvr.Resource+"/"+ns+"/"+name] = true
	}
	return err
}

type failure struct {
	message, reason, nominated string
}

type event struct {
	cycle int
	seq   int
	own   bool // about a pod popped in this cycle (not one woken by it)
	outAttempt
}

// oracle holds one run of the scheduler.
type oracle struct {
	cs      *fake.Clientset
	tracker *rvTracker
	factory informers.SharedInformerFactory
	sched   *scheduler.Scheduler
	clock   *testingclock.FakeClock
	logger  klog.Logger

	mu          sync.Mutex
	actions     int64
	seen        map[schema.GroupVersionResource]int64
	watched     map[schema.GroupVersionResource]bool
	cycle       int
	binds       int
	seq         int
	current     []string // pods popped in the current cycle
	events      []event
	evictions   []outEviction
	lastFailure map[string]failure
	best        map[string]best   // pod -> its last scoring's best nodes
	hints       map[string]string // pod -> the OpportunisticBatching hint of its current cycle
	created     map[string]bool   // object keys created in the fake API
	generated   int               // names made from generateName
	executors   []*preemption.Executor
}

func (o *oracle) observe(gvr schema.GroupVersionResource) toolscache.ResourceEventHandler {
	note := func(obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			if rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64); err == nil {
				o.mu.Lock()
				if rv > o.seen[gvr] {
					o.seen[gvr] = rv
				}
				o.mu.Unlock()
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { note(obj) },
		UpdateFunc: func(_, obj any) { note(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, err := meta.Accessor(obj); err == nil {
				o.tracker.mu.Lock()
				delete(o.tracker.deletes, gvr.Resource+"/"+m.GetNamespace()+"/"+m.GetName())
				o.tracker.mu.Unlock()
			}
		},
	}
}

func (o *oracle) watch(gvr schema.GroupVersionResource) error {
	if o.watched[gvr] {
		return nil
	}
	inf, err := o.factory.ForResource(gvr)
	if err != nil {
		return refuse("no informer for %s: %v", gvr, err)
	}
	if _, err := inf.Informer().AddEventHandler(o.observe(gvr)); err != nil {
		return err
	}
	o.watched[gvr] = true
	return nil
}

// informersCaughtUp: every write to a watched resource has reached its informer.
func (o *oracle) informersCaughtUp() bool {
	o.tracker.mu.Lock()
	defer o.tracker.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	for gvr := range o.watched {
		if o.seen[gvr] < o.tracker.written[gvr] {
			return false
		}
	}
	for key := range o.tracker.deletes {
		_ = key
		return false
	}
	return true
}

// preemptionExecutors: the DefaultPreemption plugins' executors, one per
// profile that has the plugin.
func preemptionExecutors(sched *scheduler.Scheduler) []*preemption.Executor {
	names := make([]string, 0, len(sched.Profiles))
	for name := range sched.Profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []*preemption.Executor
	for _, name := range names {
		for _, pl := range sched.Profiles[name].PreEnqueuePlugins() {
			if dp, ok := pl.(*defaultpreemption.DefaultPreemption); ok && dp.Executor != nil {
				out = append(out, dp.Executor)
			}
		}
	}
	return out
}

// preemptionRunning: an asynchronous preemption has not finished (its
// goroutine clears nominations and deletes victims after the cycle ended;
// on a loaded machine it can start after a few quiet polls, and the next
// cycle would then see a different cluster).
func (o *oracle) preemptionRunning() bool {
	if len(o.executors) == 0 {
		return false
	}
	o.tracker.mu.Lock()
	uids := append([]types.UID(nil), o.tracker.preemptors...)
	o.tracker.mu.Unlock()
	for _, ex := range o.executors {
		for _, uid := range uids {
			if ex.IsPodRunningPreemption(uid) {
				return true
			}
		}
	}
	return false
}

func (o *oracle) signature() string {
	o.mu.Lock()
	n := o.actions
	o.mu.Unlock()
	_, summary := o.sched.SchedulingQueue.PendingPods()
	return fmt.Sprintf("%d|%s", n, summary)
}

// settle waits until the scheduler has nothing in flight, every write has
// reached the informers, and neither the client nor the queue changed for
// a few consecutive polls (event handlers run on informer goroutines).
func (o *oracle) settle(deadline time.Time) error {
	last := ""
	stable := 0
	start := time.Now()
	for {
		waiting := o.waitingPods()
		inFlight := o.sched.SchedulingQueue.InFlightPods()
		var awaiting map[string]string
		if len(inFlight) > len(waiting) {
			awaiting = o.awaitingBindingConditions()
		}
		quiet := parkedOnly(inFlight, waiting, awaiting) && o.informersCaughtUp() && !o.preemptionRunning()
		// Every pod popped in this cycle has its outcome (bound, failed,
		// deleted, or parked at Permit): API calls may still be queued in
		// the scheduler's dispatcher after it let go of the pod. A pod the
		// scheduler skipped has none, hence the time limit.
		if quiet {
			known, binding := o.outcomesKnown(waiting)
			if binding > 0 {
				// A pod waiting for device binding conditions has its outcome.
				if awaiting == nil {
					awaiting = o.awaitingBindingConditions()
				}
				for key := range awaiting {
					waiting[key] = []string{bindingConditionsPlugin}
				}
				known, binding = o.outcomesKnown(waiting)
			}
			quiet = binding == 0 && (known || time.Since(start) > 200*time.Millisecond)
		}
		sig := o.signature()
		if quiet && sig == last {
			stable++
			if stable >= 3 {
				return nil
			}
		} else {
			stable = 0
		}
		last = sig
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for the scheduler to settle")
		}
		time.Sleep(300 * time.Microsecond)
	}
}

// outcomesKnown: whether every pod popped in this cycle has an outcome, and
// how many of those without one the scheduler's cache holds as assumed
// (their binding cycle still runs, e.g. a DRA PreBind waiting for a claim).
func (o *oracle) outcomesKnown(waiting map[string][]string) (bool, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	known, binding := true, 0
	for _, key := range o.current {
		if _, ok := waiting[key]; ok {
			continue
		}
		found := false
		for i := len(o.events) - 1; i >= 0 && o.events[i].cycle == o.cycle; i-- {
			if o.events[i].Pod == key {
				found = true
				break
			}
		}
		if !found {
			ns, name, _ := strings.Cut(key, "/")
			if got, err := o.tracker.Get(podsGVR, ns, name); err == nil {
				known = false
				if assumed, _ := o.sched.Cache.IsAssumedPod(got.(*corev1.Pod)); assumed {
					binding++
				}
			}
		}
	}
	return known, binding
}

// waitingPods lists the pods parked at Permit ("ns/name" -> pending
// plugins): in flight, but only another pod's cycle or a timeout moves them.
func (o *oracle) waitingPods() map[string][]string {
	out := map[string][]string{}
	for _, f := range o.sched.Profiles {
		f.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
			out[wp.GetPod().Namespace+"/"+wp.GetPod().Name] = wp.GetPendingPlugins()
		})
	}
	return out
}

// scoringFramework records, per pod, the nodes sharing the best total score
// of its last scoring.
type scoringFramework struct {
	framework.Framework
	o *oracle
}

func (f *scoringFramework) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	scores, status := f.Framework.RunScorePlugins(ctx, state, pod, nodes)
	if want := os.Getenv("DRAOPT_ORACLE_SCORES"); want != "" && (want == "*" || strings.Contains(pod.Name, want)) {
		// tracing aid: every node's score per plugin, to stderr
		for _, s := range scores {
			fmt.Fprintf(os.Stderr, "scores %s/%s %s total=%d %v\n", pod.Namespace, pod.Name, s.Name, s.TotalScore, s.Scores)
		}
	}
	if status.IsSuccess() && len(scores) > 0 {
		b := best{score: scores[0].TotalScore}
		for _, s := range scores {
			if s.TotalScore > b.score {
				b = best{score: s.TotalScore}
			}
			if s.TotalScore == b.score {
				b.nodes = append(b.nodes, s.Name)
			}
		}
		f.o.mu.Lock()
		f.o.best[pod.Namespace+"/"+pod.Name] = b
		f.o.mu.Unlock()
	}
	return scores, status
}

// GetNodeHint records the node OpportunisticBatching offers the pod from the previous pod's
// scores: a pod bound there was not scored afresh. Whether a hint is offered depends on the wall
// clock (a batch expires 500 ms after it was stored), so it can vary between runs.
func (f *scoringFramework) GetNodeHint(ctx context.Context, pod *corev1.Pod, signature fwk.PodSignature, state fwk.CycleState, cycleCount int64) string {
	hint := f.Framework.GetNodeHint(ctx, pod, signature, state, cycleCount)
	f.o.mu.Lock()
	f.o.hints[pod.Namespace+"/"+pod.Name] = hint
	f.o.mu.Unlock()
	return hint
}

type best struct {
	score int64
	nodes []string
}

func (o *oracle) record(pod, node, message, nominated string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq++
	attempt := outAttempt{Pod: pod, Node: node, Message: message, NominatedNode: nominated}
	if b, ok := o.best[pod]; ok && node != "" {
		score := b.score
		attempt.BestNodes, attempt.Score = b.nodes, &score
	}
	attempt.Hinted = node != "" && o.hints[pod] == node
	own := false
	for _, k := range o.current {
		own = own || k == pod
	}
	o.events = append(o.events, event{cycle: o.cycle, seq: o.seq, own: own, outAttempt: attempt})
}

func (o *oracle) installReactors() {
	// Applied to the tracker that stamps resource versions.
	o.cs.PrependReactor("*", "*", clienttesting.ObjectReaction(o.tracker))
	// A claim the scheduler creates (the DRA plugin's claim for extended
	// resources) is written, then seen by the informers before the call
	// returns: the plugin looks for it in its assume cache at once and
	// otherwise polls once a second on the wall clock, which changes no
	// outcome but costs seconds per pod.
	o.cs.PrependReactor("create", "resourceclaims", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "" {
			return false, nil, nil
		}
		handled, obj, err := clienttesting.ObjectReaction(o.tracker)(action)
		if err == nil {
			if claim, ok := obj.(*resourcev1.ResourceClaim); ok {
				o.waitUntilInformed(claim)
			}
		}
		return handled, obj, err
	})
	// What the API server gives an object the scheduler creates (the
	// DRA plugin's claim for extended resources): a name from generateName
	// (a counter instead of random characters) and a UID.
	o.cs.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "" {
			return false, nil, nil
		}
		m, err := meta.Accessor(action.(clienttesting.CreateAction).GetObject())
		if err != nil {
			return false, nil, nil
		}
		if m.GetName() == "" && m.GetGenerateName() != "" {
			o.mu.Lock()
			o.generated++
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), o.generated))
			o.mu.Unlock()
		}
		if m.GetUID() == "" {
			m.SetUID(stableUID(action.GetResource().Resource, m.GetNamespace(), m.GetName()))
		}
		return false, nil, nil
	})
	o.cs.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding := action.(clienttesting.CreateAction).GetObject().(*corev1.Binding)
		ns := action.GetNamespace()
		got, err := o.tracker.Get(podsGVR, ns, binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := got.(*corev1.Pod).DeepCopy()
		if pod.Spec.NodeName != "" {
			return true, nil, fmt.Errorf("pod %s/%s is already assigned to node %q", ns, pod.Name, pod.Spec.NodeName)
		}
		if len(pod.Spec.SchedulingGates) != 0 {
			return true, nil, fmt.Errorf("pod %s has non-empty .spec.schedulingGates", pod.Name)
		}
		// What the API server's binding storage does.
		pod.Spec.NodeName = binding.Target.Name
		if utilfeature.DefaultFeatureGate.Enabled(features.ClearingNominatedNodeNameAfterBinding) {
			pod.Status.NominatedNodeName = ""
		}
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		// As if the kubelet started it at once: bound later, started later.
		o.mu.Lock()
		o.binds++
		pod.Status.StartTime = &metav1.Time{Time: clockStart.Add(time.Duration(o.binds) * time.Second)}
		o.mu.Unlock()
		if err := o.tracker.Update(podsGVR, pod, ns); err != nil {
			return true, nil, err
		}
		o.record(ns+"/"+pod.Name, binding.Target.Name, "", "")
		return true, binding, nil
	})
	o.cs.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := action.(clienttesting.DeleteAction).GetName()
		o.mu.Lock()
		ev := outEviction{Pod: action.GetNamespace() + "/" + name}
		if len(o.current) == 1 {
			ev.Preemptor, ev.PreemptorKind = o.current[0], "Pod"
		} else if len(o.current) > 1 {
			// A pod group's cycle: name the group.
			ns, first, _ := strings.Cut(o.current[0], "/")
			if got, err := o.tracker.Get(podsGVR, ns, first); err == nil {
				if g := got.(*corev1.Pod).Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
					ev.Preemptor, ev.PreemptorKind = ns+"/"+*g.PodGroupName, "PodGroup"
				}
			}
		}
		o.evictions = append(o.evictions, ev)
		o.mu.Unlock()
		return false, nil, nil
	})
	o.cs.PrependReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		o.mu.Lock()
		o.actions++
		o.mu.Unlock()
		return false, nil, nil
	})
}

// waitUntilInformed waits, at most 100 ms, until the claim informer holds
// `claim`, then lets its event handlers run.
func (o *oracle) waitUntilInformed(claim *resourcev1.ResourceClaim) {
	lister := o.factory.Resource().V1().ResourceClaims().Lister().ResourceClaims(claim.Namespace)
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		if got, err := lister.Get(claim.Name); err == nil && got.ResourceVersion == claim.ResourceVersion {
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
	time.Sleep(time.Millisecond)
}

// waitQueued waits until the scheduling queue holds `pod`; false at the
// deadline.
func waitQueued(sched *scheduler.Scheduler, pod *corev1.Pod, deadline time.Time) bool {
	for !inQueue(sched, pod) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

func setCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	for i := range status.Conditions {
		if status.Conditions[i].Type == c.Type {
			status.Conditions[i] = c
			return
		}
	}
	status.Conditions = append(status.Conditions, c)
}

func run(in *inputDoc) (*outputDoc, error) {
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(in.Gates); err != nil {
		return nil, refuse("feature gates: %v", err)
	}
	if v := os.Getenv("DRAOPT_ORACLE_VERBOSITY"); v != "" {
		var fs = klogFlags()
		_ = fs.Set("v", v)
	} else {
		klog.SetOutput(os.Stderr)
	}
	opts, err := schedulerOptions(in.SchedulerConfig)
	if err != nil {
		return nil, err
	}
	objs, err := decodeObjects(in.Objects)
	if err != nil {
		return nil, err
	}
	objs = append(implicitNamespaces(objs), objs...)
	timeout := time.Duration(in.TimeoutSeconds * float64(time.Second))
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logger := klog.Background()
	ctx = klog.NewContext(ctx, logger)

	cs := fake.NewSimpleClientset()
	o := &oracle{
		cs: cs,
		tracker: &rvTracker{ObjectTracker: cs.Tracker(), written: map[schema.GroupVersionResource]int64{},
			deletes: map[string]bool{}, known: map[types.UID]bool{}},
		clock:       testingclock.NewFakeClock(clockStart),
		logger:      logger,
		seen:        map[schema.GroupVersionResource]int64{},
		watched:     map[schema.GroupVersionResource]bool{},
		lastFailure: map[string]failure{},
		best:        map[string]best{},
		hints:       map[string]string{},
		created:     map[string]bool{},
	}
	o.installReactors()
	o.factory = newInformerFactory(cs)
	recorder := profile.RecorderFactory(func(string) events.EventRecorderLogger { return &events.FakeRecorder{} })
	opts = append(opts, scheduler.WithClock(o.clock), scheduler.WithParallelism(1))
	sched, err := scheduler.New(ctx, cs, o.factory, nil, recorder, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the scheduler: %w", err)
	}
	o.sched = sched
	o.executors = preemptionExecutors(sched)
	handle := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, f framework.Framework, pi *framework.QueuedPodInfo, status *fwk.Status, ni *fwk.NominatingInfo, start time.Time) {
		key := pi.Pod.Namespace + "/" + pi.Pod.Name
		reason := corev1.PodReasonSchedulerError
		if status.IsRejected() {
			reason = corev1.PodReasonUnschedulable
		}
		nominated := ""
		if ni != nil && ni.Mode() == fwk.ModeOverride {
			nominated = ni.NominatedNodeName
		}
		o.record(key, "", status.Message(), nominated)
		o.mu.Lock()
		o.lastFailure[key] = failure{message: status.Message(), reason: reason, nominated: nominated}
		o.mu.Unlock()
		if pi.Pod.Spec.SchedulingGroup != nil {
			// A real clock moves between two failures: a pod group's members, requeued one
			// after the other by the scheduling goroutine, get distinct queue timestamps in
			// that order and keep it in the next cycle (not name order, as a still clock gives).
			o.clock.Step(time.Microsecond)
		}
		handle(ctx, f, pi, status, ni, start)
	}
	// The scheduler pops only when the driver loop hands it a token, so
	// cycles run one at a time, each after the previous one settled.
	tokens := make(chan struct{})
	cycleDone := make(chan struct{}, 1)
	var inPop atomic.Bool
	for name, f := range sched.Profiles {
		sched.Profiles[name] = &scoringFramework{Framework: f, o: o}
	}
	wrapNext(sched, func() { <-tokens; inPop.Store(true) }, func(keys []string) {
		inPop.Store(false)
		o.mu.Lock()
		for _, k := range keys {
			delete(o.best, k)
			delete(o.hints, k)
		}
		o.current = keys
		o.mu.Unlock()
	})

	for _, gvr := range []schema.GroupVersionResource{podsGVR, claimsGVR} {
		if err := o.watch(gvr); err != nil {
			return nil, err
		}
	}
	for _, ob := range objs {
		if err := o.watch(ob.gvr); err != nil {
			return nil, err
		}
	}
	o.factory.Start(ctx.Done())
	o.factory.WaitForCacheSync(ctx.Done())
	sched.SchedulingQueue.Run(logger)
	if sched.APIDispatcher != nil {
		sched.APIDispatcher.Run(logger)
	}

	// Create the objects in a defined order, each batch seen by the
	// informers before the next; pending pods one at a time with the clock
	// stepped between them, so queue timestamps follow the input order.
	var runErr error
	ordered := creationOrder(objs)
	for i, ob := range ordered {
		if isTerminal(ob.obj) {
			// kube-scheduler's pod informer lists no Succeeded or Failed pod
			// (a field selector the fake client ignores): never created.
			continue
		}
		if err := o.tracker.Create(ob.gvr, ob.obj, ob.meta.GetNamespace()); err != nil {
			return nil, refuse("creating %s: %v", ob.key(), err)
		}
		o.created[ob.key()] = true
		pendingPod := creationRank(ob) == 11
		if pendingPod && i+1 < len(ordered) {
			// Only the queue has to have it (its timestamp is the clock's
			// now) before the clock moves on. Every pending pod of this
			// scheduler's profiles is queued: waiting for it without a short
			// cap keeps the input order on a loaded machine (a capped wait
			// once let the clock move first, and two runs differed).
			pod := ob.obj.(*corev1.Pod)
			if _, ours := sched.Profiles[pod.Spec.SchedulerName]; ours && !waitQueued(sched, pod, deadline) {
				runErr = fmt.Errorf("creating the objects: timed out waiting for %s to be queued", ob.key())
				break
			}
		} else if i+1 == len(ordered) || creationRank(ordered[i+1]) != creationRank(ob) || i%50 == 49 {
			if err := o.settle(deadline); err != nil {
				runErr = fmt.Errorf("creating the objects: %w", err)
				break
			}
		}
		if pendingPod {
			o.clock.Step(time.Millisecond)
		}
	}

	popFromBackoff := utilfeature.DefaultFeatureGate.Enabled(features.SchedulerPopFromBackoffQ)
	out := &outputDoc{Version: kubernetesVersion()}
	go func() {
		for ctx.Err() == nil {
			sched.ScheduleOne(ctx)
			select {
			case cycleDone <- struct{}{}:
			case <-ctx.Done():
			}
		}
	}()
	lastStuck := ""
	lastProgress, idleCycles := "", 0
	idleLimit := 20
	for _, ob := range objs {
		if _, ok := ob.obj.(*corev1.Pod); ok {
			idleLimit += 4
		}
	}
loop:
	for runErr == nil {
		if err := o.settle(deadline); err != nil {
			runErr = err
			break
		}
		active := len(sched.SchedulingQueue.PodsInActiveQ())
		backoff := len(sched.SchedulingQueue.PodsInBackoffQ())
		if active+backoff == 0 {
			break
		}
		if time.Now().After(deadline) {
			runErr = fmt.Errorf("no quiescence within %v (%d scheduling cycles)", timeout, o.cycle)
			break
		}
		if active == 0 && !popFromBackoff {
			o.clock.Step(time.Duration(maxBackoff+1) * time.Second)
			continue
		}
		o.mu.Lock()
		progress := fmt.Sprintf("%d|%d", o.binds, len(o.evictions))
		o.mu.Unlock()
		if progress != lastProgress {
			lastProgress, idleCycles = progress, 0
		} else if idleCycles++; idleCycles > idleLimit {
			// Pods keep being retried (events they cause move each other
			// back to the queue) without any bind or eviction: the 1.36
			// gang plugin's Permit waits and rejections do this.
			out.Livelock = fmt.Sprintf("stopped after %d scheduling cycles without a bind or eviction; pods still retried: %s",
				idleCycles-1, strings.Join(podKeys(sched.SchedulingQueue.PodsInActiveQ(), sched.SchedulingQueue.PodsInBackoffQ()), ", "))
			break
		}
		o.mu.Lock()
		o.cycle++
		o.current = nil
		o.mu.Unlock()
		// A cycle takes time: queue timestamps (the order among pods of
		// equal priority) follow the order of the attempts, as they would.
		o.clock.Step(time.Millisecond)
		tokens <- struct{}{}
		for {
			select {
			case <-cycleDone:
				continue loop
			case <-time.After(5 * time.Millisecond):
			}
			if !inPop.Load() {
				continue
			}
			// Still waiting in Pop: the queue listed pods that it does not
			// hand out (e.g. a pod group whose members are not all there).
			// Once everything settled with Pop still waiting, nothing more
			// can be scheduled.
			if err := o.settle(deadline); err != nil {
				runErr = err
				break loop
			}
			select {
			case <-cycleDone:
				continue loop
			default:
			}
			if inPop.Load() {
				// Pod groups wait out their backoff in backoffQ (Pop does not
				// take them early): let the backoff expire once, and stop when
				// a retry changed nothing.
				if inBackoff := sched.SchedulingQueue.PodsInBackoffQ(); len(inBackoff) > 0 {
					o.mu.Lock()
					sig := fmt.Sprintf("%d|%d|%d", len(inBackoff), o.binds, len(o.evictions))
					o.mu.Unlock()
					if sig != lastStuck {
						lastStuck = sig
						o.clock.Step(time.Duration(maxBackoff+1) * time.Second)
						continue
					}
				}
				if os.Getenv("DRAOPT_ORACLE_VERBOSITY") != "" {
					names := func(pods []*corev1.Pod) (out []string) {
						for _, p := range pods {
							out = append(out, p.Namespace+"/"+p.Name)
						}
						return out
					}
					fmt.Fprintf(os.Stderr, "oracle: Pop waits; activeQ lists %v, backoffQ lists %v\n",
						names(sched.SchedulingQueue.PodsInActiveQ()), names(sched.SchedulingQueue.PodsInBackoffQ()))
				}
				o.mu.Lock()
				o.cycle-- // this cycle never started
				o.mu.Unlock()
				break loop
			}
		}
	}
	// The answer is read before the scheduler stops: stopping rejects the
	// pods still waiting at Permit.
	waiting := o.waitingPods()
	awaiting := o.awaitingBindingConditions()
	o.mu.Lock()
	out.Cycles = o.cycle
	o.fillOutput(out, objs, waiting, awaiting)
	o.mu.Unlock()
	cancel()
	sched.SchedulingQueue.Close()
	return out, runErr
}

func (o *oracle) fillOutput(out *outputDoc, objs []*object, waiting map[string][]string, awaiting map[string]string) {
	// Events of one cycle from binding goroutines (pod groups, pods
	// waiting at Permit) may race: keep the cycles in order; inside a cycle
	// the popped pod's failures in order, then the rest by pod.
	sort.SliceStable(o.events, func(i, j int) bool {
		a, b := o.events[i], o.events[j]
		if a.cycle != b.cycle {
			return a.cycle < b.cycle
		}
		if a.own != b.own {
			return a.own
		}
		if a.own && a.Node == "" && b.Node == "" {
			return a.seq < b.seq
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.seq < b.seq
	})
	out.Attempts = []outAttempt{}
	for _, e := range o.events {
		out.Attempts = append(out.Attempts, e.outAttempt)
	}
	// Victims are deleted in parallel goroutines (the preemption executor): their order of
	// arrival is not the scheduler's answer, the set is; listed by pod.
	out.Evictions = append([]outEviction{}, o.evictions...)
	sort.SliceStable(out.Evictions, func(i, j int) bool { return out.Evictions[i].Pod < out.Evictions[j].Pod })
	out.Pods = []outPod{}
	for _, ob := range objs {
		in, ok := ob.obj.(*corev1.Pod)
		if !ok {
			continue
		}
		key := in.Namespace + "/" + in.Name
		p := outPod{Namespace: in.Namespace, Name: in.Name}
		if isTerminal(in) {
			p.Node, p.Reason = in.Spec.NodeName, string(in.Status.Phase)
			out.Pods = append(out.Pods, p)
			continue
		}
		got, err := o.tracker.Get(podsGVR, in.Namespace, in.Name)
		if err != nil {
			if o.created[ob.key()] {
				p.Deleted, p.Reason = true, "Deleted"
			} else {
				p.Reason = "NotCreated" // the run stopped (timeout) before it
			}
			out.Pods = append(out.Pods, p)
			continue
		}
		pod := got.(*corev1.Pod)
		p.Node = pod.Spec.NodeName
		p.NominatedNode = pod.Status.NominatedNodeName
		if p.Node == "" {
			if len(pod.Spec.SchedulingGates) > 0 {
				p.Message, p.Reason = "SchedulingGated", corev1.PodReasonSchedulingGated
			} else if node, ok := awaiting[key]; ok {
				// The node is chosen and the claims written; the bind
				// follows once the driver reports the conditions, and
				// clears the nomination written before PreBind.
				p.Node, p.NominatedNode, p.Reason = node, "", "BindingConditions"
				p.Message = "assumed on " + node + ", waiting in PreBind for the devices' binding conditions"
			} else if plugins, ok := waiting[key]; ok {
				// Assumed on a node, its binding cycle waiting at Permit
				// (e.g. a gang short of its minCount in 1.36).
				p.Message, p.Reason = "waiting at Permit for "+strings.Join(plugins, ", "), "Permit"
			} else if plugin := gatingPlugin(o.sched, pod); plugin != "" {
				// Held back by a PreEnqueue plugin: the scheduler writes no
				// condition for that; the oracle says which plugin.
				p.Message, p.Reason = "waiting at PreEnqueue plugin "+plugin, "PreEnqueue"
			} else if f, ok := o.lastFailure[key]; ok {
				p.Message, p.Reason = f.message, f.reason
				if p.NominatedNode == "" {
					p.NominatedNode = f.nominated
				}
			}
			for _, c := range pod.Status.Conditions {
				if p.Node == "" && c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
					p.Message, p.Reason = c.Message, c.Reason
				}
			}
		}
		out.Pods = append(out.Pods, p)
	}
	out.Claims = []outClaim{}
	if list, err := o.tracker.List(claimsGVR, resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"), ""); err == nil {
		items := list.(*resourcev1.ResourceClaimList).Items
		sort.Slice(items, func(i, j int) bool {
			if items[i].Namespace != items[j].Namespace {
				return items[i].Namespace < items[j].Namespace
			}
			return items[i].Name < items[j].Name
		})
		for _, c := range items {
			if c.Status.Allocation != nil {
				// Wall-clock time of the write: left out for reproducible output.
				c.Status.Allocation.AllocationTimestamp = nil
			}
			alloc, _ := json.Marshal(c.Status.Allocation)
			reserved := c.Status.ReservedFor
			if reserved == nil {
				reserved = []resourcev1.ResourceClaimConsumerReference{}
			}
			rf, _ := json.Marshal(reserved)
			out.Claims = append(out.Claims, outClaim{Namespace: c.Namespace, Name: c.Name, Allocation: alloc, ReservedFor: rf})
		}
	}
	snap := internalcache.NewEmptySnapshot()
	out.NodeOrder = []string{}
	if err := o.sched.Cache.UpdateSnapshot(o.logger, snap); err == nil {
		if infos, err := snap.NodeInfos().List(); err == nil {
			for _, ni := range infos {
				out.NodeOrder = append(out.NodeOrder, ni.Node().Name)
			}
		}
	}
}

func podKeys(lists ...[]*corev1.Pod) []string {
	var out []string
	for _, pods := range lists {
		for _, p := range pods {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func isTerminal(obj runtime.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
}
