// Package pgxuuid lets pgx send and read github.com/google/uuid values as PostgreSQL's binary 16 bytes.
//
// Without it pgx reaches uuid.UUID through database/sql's driver.Valuer and sql.Scanner: every parameter is
// formatted as a 36-character string and parsed back into bytes, every scanned value the other way round,
// and a []uuid.UUID parameter is walked by reflection. In a backlog drain that was about a tenth of the
// server's CPU (the completion sends two uuid arrays per batch, the claim scans four uuids per row).
// (github.com/jackc/pgx-google-uuid does the same, but the module proxy does not serve it.)
//
// Values are what they were before: the same uuid goes in and comes out, NULL still leaves a uuid.UUID
// untouched as uuid.UUID.Scan does, and a nil *uuid.UUID or []uuid.UUID is still NULL.
package pgxuuid

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AfterConnect registers the codec on a new connection (pgxpool.Config.AfterConnect): every pool the
// server and its tests open sets it, as type maps are per connection.
func AfterConnect(_ context.Context, conn *pgx.Conn) error {
	Register(conn.TypeMap())
	return nil
}

// Register makes m encode and scan uuid.UUID, *uuid.UUID and []uuid.UUID in binary.
func Register(m *pgtype.Map) {
	m.TryWrapEncodePlanFuncs = append([]pgtype.TryWrapEncodePlanFunc{tryWrapSliceEncode}, m.TryWrapEncodePlanFuncs...)
	m.TryWrapScanPlanFuncs = append([]pgtype.TryWrapScanPlanFunc{tryWrapSliceScan}, m.TryWrapScanPlanFuncs...)
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: codec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}

// codec is pgtype's UUIDCodec that also knows uuid.UUID. Everything else (pgtype.UUID, [16]byte, strings,
// decoding into any) is left to pgtype's own codec.
type codec struct{ pgtype.UUIDCodec }

func (c codec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	switch value.(type) {
	case uuid.UUID, *uuid.UUID:
		switch format {
		case pgtype.BinaryFormatCode:
			return encodeBinary{}
		case pgtype.TextFormatCode:
			return encodeText{}
		}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c codec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok {
		switch format {
		case pgtype.BinaryFormatCode:
			return scanBinary{}
		case pgtype.TextFormatCode:
			return scanText{}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

// value is the uuid to encode, or false for NULL (pgx itself sends a nil pointer as NULL before any plan
// runs; this is for completeness).
func value(v any) (uuid.UUID, bool) {
	switch v := v.(type) {
	case uuid.UUID:
		return v, true
	case *uuid.UUID:
		if v == nil {
			return uuid.UUID{}, false
		}
		return *v, true
	}
	return uuid.UUID{}, false
}

type encodeBinary struct{}

func (encodeBinary) Encode(v any, buf []byte) ([]byte, error) {
	u, ok := value(v)
	if !ok {
		return nil, nil
	}
	return append(buf, u[:]...), nil
}

type encodeText struct{}

func (encodeText) Encode(v any, buf []byte) ([]byte, error) {
	u, ok := value(v)
	if !ok {
		return nil, nil
	}
	return append(buf, u.String()...), nil
}

// NULL leaves the target as it is, as uuid.UUID.Scan(nil) did: a nullable column is scanned into a
// *uuid.UUID, whose NULL pgx handles before this plan runs.
type scanBinary struct{}

func (scanBinary) Scan(src []byte, dst any) error {
	if src == nil {
		return nil
	}
	if len(src) != 16 {
		return fmt.Errorf("invalid length for UUID: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}

type scanText struct{}

func (scanText) Scan(src []byte, dst any) error {
	if src == nil {
		return nil
	}
	u, err := uuid.ParseBytes(src)
	if err != nil {
		return err
	}
	*dst.(*uuid.UUID) = u
	return nil
}

// tryWrapSliceEncode hands a []uuid.UUID to the array codec as a pgtype.FlatArray, which it indexes
// directly, instead of pgx's reflection over an unknown slice type.
func tryWrapSliceEncode(v any) (pgtype.WrappedEncodePlanNextSetter, any, bool) {
	if s, ok := v.([]uuid.UUID); ok {
		return &sliceEncode{}, pgtype.FlatArray[uuid.UUID](s), true
	}
	return nil, nil, false
}

type sliceEncode struct{ next pgtype.EncodePlan }

func (p *sliceEncode) SetNext(next pgtype.EncodePlan) { p.next = next }

func (p *sliceEncode) Encode(v any, buf []byte) ([]byte, error) {
	return p.next.Encode(pgtype.FlatArray[uuid.UUID](v.([]uuid.UUID)), buf)
}

// tryWrapSliceScan is tryWrapSliceEncode's counterpart for a *[]uuid.UUID target.
func tryWrapSliceScan(target any) (pgtype.WrappedScanPlanNextSetter, any, bool) {
	if s, ok := target.(*[]uuid.UUID); ok {
		return &sliceScan{}, (*pgtype.FlatArray[uuid.UUID])(s), true
	}
	return nil, nil, false
}

type sliceScan struct{ next pgtype.ScanPlan }

func (p *sliceScan) SetNext(next pgtype.ScanPlan) { p.next = next }

func (p *sliceScan) Scan(src []byte, dst any) error {
	return p.next.Scan(src, (*pgtype.FlatArray[uuid.UUID])(dst.(*[]uuid.UUID)))
}

// NewPool is pgxpool.New with the codec registered, for the pools tests and the benchmark harness open
// on their own.
func NewPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.AfterConnect = AfterConnect
	return pgxpool.NewWithConfig(ctx, cfg)
}
