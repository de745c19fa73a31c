package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/hookline/hookline/client"
)

func runEventTypesList(ctx context.Context, in *invocation) error {
	if err := in.wantArgs(); err != nil {
		return err
	}
	c, err := in.client()
	if err != nil {
		return err
	}
	var params client.ListEventTypesParams
	if in.o.archived {
		params.IncludeArchived = &in.o.archived
	}
	res, err := c.ListEventTypesWithResponse(ctx, &params)
	if err != nil {
		return err
	}
	if res.JSON200 == nil {
		return fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	if in.g.json {
		return printRaw(in.stdout, res.Body)
	}
	if len(res.JSON200.Items) == 0 {
		fmt.Fprintln(in.stdout, "no event types")
		return nil
	}
	tw := tabwriter.NewWriter(in.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tGROUP\tSCHEMA\tSTATUS\tDESCRIPTION")
	for _, et := range res.JSON200.Items {
		schema, status := "-", "-"
		if et.Schema != nil {
			schema = "yes"
		}
		switch {
		case et.Archived:
			status = "archived"
		case et.Deprecated:
			status = "deprecated"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", et.Name, et.Group, schema, status, oneLine(et.Description, 60))
	}
	return tw.Flush()
}

func runEventTypesImport(ctx context.Context, in *invocation) error {
	if err := in.wantArgs("the OpenAPI document (a file)"); err != nil {
		return err
	}
	name := in.args[0]
	doc, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	c, err := in.client()
	if err != nil {
		return err
	}
	// The server reads either; the content type says which the file is.
	contentType := "application/yaml"
	if strings.EqualFold(filepath.Ext(name), ".json") {
		contentType = "application/json"
	}
	var params client.ImportEventTypesParams
	if in.o.dryRun {
		params.DryRun = &in.o.dryRun
	}
	res, err := c.ImportEventTypesWithBodyWithResponse(ctx, &params, contentType, bytes.NewReader(doc))
	if err != nil {
		return err
	}
	r := res.JSON200
	if r == nil {
		return fmt.Errorf("unexpected answer %d from the server", res.StatusCode())
	}
	if in.g.json {
		if err := printRaw(in.stdout, res.Body); err != nil {
			return err
		}
	} else {
		if r.DryRun {
			fmt.Fprintln(in.stdout, "dry run: nothing was changed")
		}
		for _, l := range []struct {
			what  string
			names []string
		}{{"created", r.Created}, {"updated", r.Updated}, {"unchanged", r.Unchanged}} {
			if len(l.names) > 0 {
				fmt.Fprintf(in.stdout, "%s: %s\n", l.what, strings.Join(l.names, ", "))
			}
		}
	}
	if len(r.Errors) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(in.stderr, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "hookline: %s could not be imported:\n", count(len(r.Errors), "webhook", "webhooks"))
	for _, e := range r.Errors {
		fmt.Fprintf(tw, "  %s\t%s\n", e.Name, e.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return errReported
}

// errReported is a failure already described on stderr: exit status 1, nothing more printed.
var errReported = errors.New("reported")
