package service

import (
	"context"
	"errors"
	"slices"
	"testing"
)

type recorder struct {
	name     string
	log      *[]string
	startErr error
}

func (r recorder) Start(context.Context) error {
	*r.log = append(*r.log, "start "+r.name)
	return r.startErr
}

func (r recorder) Stop(context.Context) error {
	*r.log = append(*r.log, "stop "+r.name)
	return nil
}

func TestGroupStartsInOrderAndStopsInReverse(t *testing.T) {
	t.Parallel()
	var log []string
	var g Group
	g.Add("a", recorder{name: "a", log: &log})
	g.Add("b", recorder{name: "b", log: &log})
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"start a", "start b", "stop b", "stop a"}; !slices.Equal(log, want) {
		t.Errorf("%v, want %v", log, want)
	}
	if err := g.Stop(context.Background()); err != nil || len(log) != 4 {
		t.Errorf("a second Stop stopped again: %v %v", err, log)
	}
}

// A service that fails to start stops the ones started before it, and only those.
func TestGroupStopsWhatStartedWhenOneFails(t *testing.T) {
	t.Parallel()
	var log []string
	boom := errors.New("boom")
	var g Group
	g.Add("a", recorder{name: "a", log: &log})
	g.Add("b", recorder{name: "b", log: &log, startErr: boom})
	g.Add("c", recorder{name: "c", log: &log})
	if err := g.Start(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if want := []string{"start a", "start b", "stop a"}; !slices.Equal(log, want) {
		t.Errorf("%v, want %v", log, want)
	}
}
