package main

import "context"

func (b *bench) ingest(ctx context.Context) error  { return errNotYet }
func (b *bench) latency(ctx context.Context) error { return errNotYet }
func (b *bench) idle(ctx context.Context) error    { return errNotYet }
func (b *bench) retry(ctx context.Context) error   { return errNotYet }
func (b *bench) pages(ctx context.Context) error   { return errNotYet }
func (b *bench) rss(ctx context.Context) error     { return errNotYet }
func (b *bench) scaling(ctx context.Context) error { return errNotYet }
