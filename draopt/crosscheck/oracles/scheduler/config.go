package main

import (
	"flag"

	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// maxBackoff is the configured podMaxBackoffSeconds (the default without a
// configuration); the clock is stepped past it when backoff has to expire.
var maxBackoff int64 = 10

// schedulerOptions decodes a KubeSchedulerConfiguration the way
// kube-scheduler does (its scheme, defaults that follow the feature gates
// already set, validation) and turns it into options for scheduler.New.
// Without one, scheduler.New applies the default profile itself.
func schedulerOptions(text *string) ([]scheduler.Option, error) {
	if text == nil {
		return nil, nil
	}
	obj, gvk, err := schedulerscheme.Codecs.UniversalDecoder().Decode([]byte(*text), nil, nil)
	if err != nil {
		return nil, refuse("schedulerConfig: %v", err)
	}
	cfg, ok := obj.(*schedulerapi.KubeSchedulerConfiguration)
	if !ok {
		return nil, refuse("schedulerConfig: got %v, not a KubeSchedulerConfiguration", gvk)
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, refuse("schedulerConfig is invalid: %v", err)
	}
	if len(cfg.Extenders) > 0 {
		return nil, refuse("schedulerConfig: extenders are not supported by the oracle")
	}
	maxBackoff = cfg.PodMaxBackoffSeconds
	return []scheduler.Option{
		scheduler.WithComponentConfigVersion(gvk.GroupVersion().String()),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
	}, nil
}

func klogFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	return fs
}
