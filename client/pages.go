package client

import (
	"context"
	"fmt"
	"iter"
)

// PageFunc fetches one page of a list: the page after cursor ("" for the first), its items, and the
// cursor of the next page ("" after the last).
type PageFunc[T any] func(ctx context.Context, cursor string) (items []T, next string, err error)

// All iterates a list across its pages, fetching each page as the loop reaches it; an error (of a page,
// or ctx's) is yielded once, with the zero T, and ends the iteration. Breaking out of the loop fetches
// nothing more.
//
//	for d, err := range client.All(ctx, page) {
//		if err != nil { return err }
//		...
//	}
func All[T any](ctx context.Context, page PageFunc[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := ""
		for {
			items, next, err := page(ctx, cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			if next == cursor {
				// A server that answers the cursor it was given would loop forever.
				yield(zero, fmt.Errorf("client: the server answered the page's own cursor %q as the next one", next))
				return
			}
			cursor = next
		}
	}
}

// cursorParam is the cursor query parameter of a page after the first.
func cursorParam(cursor string) *string {
	if cursor == "" {
		return nil
	}
	return &cursor
}

// Deliveries iterates tenantID's deliveries, newest first, matching params (nil: every delivery; its
// Limit is the page size, its Cursor is ignored: each page's is the previous page's next_cursor).
func (c *Client) Deliveries(ctx context.Context, tenantID string, params *ListDeliveriesParams) iter.Seq2[Delivery, error] {
	p := ListDeliveriesParams{}
	if params != nil {
		p = *params
	}
	return All(ctx, func(ctx context.Context, cursor string) ([]Delivery, string, error) {
		q := p // a copy per page: the iterator may be ranged over more than once, at once
		q.Cursor = cursorParam(cursor)
		res, err := c.ListDeliveriesWithResponse(ctx, tenantID, &q)
		if err != nil {
			return nil, "", err
		}
		page, err := answer(res, res.JSON200, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.NextCursor, nil
	})
}

// Activity iterates tenantID's activity log, newest first, matching params (nil: every entry; its Limit
// is the page size, its Cursor is ignored).
func (c *Client) Activity(ctx context.Context, tenantID string, params *ListActivityParams) iter.Seq2[Activity, error] {
	p := ListActivityParams{}
	if params != nil {
		p = *params
	}
	return All(ctx, func(ctx context.Context, cursor string) ([]Activity, string, error) {
		q := p
		q.Cursor = cursorParam(cursor)
		res, err := c.ListActivityWithResponse(ctx, tenantID, &q)
		if err != nil {
			return nil, "", err
		}
		page, err := answer(res, res.JSON200, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.NextCursor, nil
	})
}

// Replays iterates the replay audit log (an admin call), newest first, matching params (nil: every
// replay and recover; its Limit is the page size, its Cursor is ignored).
func (c *Client) Replays(ctx context.Context, params *ListReplaysParams) iter.Seq2[Replay, error] {
	p := ListReplaysParams{}
	if params != nil {
		p = *params
	}
	return All(ctx, func(ctx context.Context, cursor string) ([]Replay, string, error) {
		q := p
		q.Cursor = cursorParam(cursor)
		res, err := c.ListReplaysWithResponse(ctx, &q)
		if err != nil {
			return nil, "", err
		}
		page, err := answer(res, res.JSON200, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.NextCursor, nil
	})
}

// TenantReplays iterates the recovers of tenantID's subscriptions, newest first, matching params (nil:
// every one; its Limit is the page size, its Cursor is ignored).
func (c *Client) TenantReplays(ctx context.Context, tenantID string, params *ListTenantReplaysParams) iter.Seq2[Replay, error] {
	p := ListTenantReplaysParams{}
	if params != nil {
		p = *params
	}
	return All(ctx, func(ctx context.Context, cursor string) ([]Replay, string, error) {
		q := p
		q.Cursor = cursorParam(cursor)
		res, err := c.ListTenantReplaysWithResponse(ctx, tenantID, &q)
		if err != nil {
			return nil, "", err
		}
		page, err := answer(res, res.JSON200, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Items, page.NextCursor, nil
	})
}

// Subscriptions iterates tenantID's subscriptions, oldest first. The API answers them in one page (a
// tenant has at most HOOKLINE_MAX_SUBSCRIPTIONS_PER_TENANT); the iterator has the shape of the paginated
// lists' so callers need not tell them apart, and will not change when the list gains a cursor.
func (c *Client) Subscriptions(ctx context.Context, tenantID string) iter.Seq2[Subscription, error] {
	return All(ctx, func(ctx context.Context, _ string) ([]Subscription, string, error) {
		res, err := c.ListSubscriptionsWithResponse(ctx, tenantID, nil)
		if err != nil {
			return nil, "", err
		}
		page, err := answer(res, res.JSON200, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Items, "", nil
	})
}

// EventTypes iterates the event catalogue by group and name (archived types too with
// params.IncludeArchived). The API answers it in one page, as Subscriptions.
func (c *Client) EventTypes(ctx context.Context, params *ListEventTypesParams) iter.Seq2[CatalogueEventType, error] {
	return All(ctx, func(ctx context.Context, _ string) ([]CatalogueEventType, string, error) {
		res, err := c.ListEventTypesWithResponse(ctx, params)
		if err != nil {
			return nil, "", err
		}
		page, err := answer(res, res.JSON200, nil)
		if err != nil {
			return nil, "", err
		}
		return page.Items, "", nil
	})
}
