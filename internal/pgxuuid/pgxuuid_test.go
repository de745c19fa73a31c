package pgxuuid

import (
	"context"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookline/hookline/internal/testdb"
)

var dbURL string

func TestMain(m *testing.M) { testdb.Main(m, "pgxuuid", func(u string) { dbURL = u }) }

func pool(t *testing.T, register bool) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if register {
		cfg.AfterConnect = AfterConnect
	}
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// The registered map must not fall back to the string paths this package exists to avoid.
func TestPlansAreBinary(t *testing.T) {
	t.Parallel()
	m := pgtype.NewMap()
	Register(m)
	if p := m.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, uuid.New()); reflect.TypeOf(p) != reflect.TypeOf(encodeBinary{}) {
		t.Errorf("uuid.UUID encodes with %T", p)
	}
	if p := m.PlanEncode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, []uuid.UUID{uuid.New()}); reflect.TypeOf(p) != reflect.TypeOf(&sliceEncode{}) {
		t.Errorf("[]uuid.UUID encodes with %T", p)
	}
	if p := m.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, new(uuid.UUID)); reflect.TypeOf(p) != reflect.TypeOf(scanBinary{}) {
		t.Errorf("uuid.UUID scans with %T", p)
	}
	if p := m.PlanScan(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, new([]uuid.UUID)); reflect.TypeOf(p) != reflect.TypeOf(&sliceScan{}) {
		t.Errorf("[]uuid.UUID scans with %T", p)
	}
}

// roundTrip is what one query gives back, scanned into the types sqlc generates.
type roundTrip struct {
	One, Preset uuid.UUID
	Text        string
	Ptr, NilPtr *uuid.UUID
	Arr         []uuid.UUID
	ArrText     string
	NullArr     []uuid.UUID
	EmptyArr    []uuid.UUID
	NullElem    []uuid.UUID
	Err         string
}

// query sends u and v and reads them back; arrays only where pgx knows the parameter types (it cannot send
// a slice of an unregistered type as text, with or without this package).
func query(ctx context.Context, p *pgxpool.Pool, mode pgx.QueryExecMode, u, v uuid.UUID, arrays bool) roundTrip {
	var r roundTrip
	r.Preset = uuid.MustParse("00000000-0000-0000-0000-0000000000ff") // NULL must leave it as it is
	var nilPtr *uuid.UUID
	sql := `SELECT $1::uuid, $1::uuid::text, NULL::uuid, $2::uuid, $3::uuid`
	args := []any{mode, u, &v, nilPtr}
	dst := []any{&r.One, &r.Text, &r.Preset, &r.Ptr, &r.NilPtr}
	if arrays {
		sql += `, $4::uuid[], $4::uuid[]::text, $5::uuid[], $6::uuid[], ARRAY[$1::uuid, NULL]`
		args = append(args, []uuid.UUID{u, v}, []uuid.UUID(nil), []uuid.UUID{})
		dst = append(dst, &r.Arr, &r.ArrText, &r.NullArr, &r.EmptyArr, &r.NullElem)
	}
	if err := p.QueryRow(ctx, sql, args...).Scan(dst...); err != nil {
		r.Err = err.Error()
	}
	return r
}

// Through the database both ways, binary and text (the simple protocol), the registered pool gives
// exactly what pgx gave through uuid's Valuer and Scanner, and PostgreSQL sees the right values.
func TestRoundTripMatchesValuerPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fast, slow := pool(t, true), pool(t, false)
	u, v := uuid.Must(uuid.NewV7()), uuid.New()
	for _, c := range []struct {
		mode   pgx.QueryExecMode
		arrays bool
	}{
		{pgx.QueryExecModeCacheStatement, true}, // the server's
		{pgx.QueryExecModeDescribeExec, true},
		{pgx.QueryExecModeExec, false},
		{pgx.QueryExecModeSimpleProtocol, false}, // text both ways
	} {
		got, want := query(ctx, fast, c.mode, u, v, c.arrays), query(ctx, slow, c.mode, u, v, c.arrays)
		if got.Err != "" {
			t.Fatalf("%v: %s", c.mode, got.Err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: registered %+v, Valuer path %+v", c.mode, got, want)
		}
		if got.One != u || got.Text != u.String() || got.Ptr == nil || *got.Ptr != v || got.NilPtr != nil {
			t.Errorf("%v: scalars %+v", c.mode, got)
		}
		if got.Preset.String() != "00000000-0000-0000-0000-0000000000ff" {
			t.Errorf("%v: NULL changed a uuid.UUID to %s", c.mode, got.Preset)
		}
		if !c.arrays {
			continue
		}
		if !reflect.DeepEqual(got.Arr, []uuid.UUID{u, v}) || got.ArrText != "{"+u.String()+","+v.String()+"}" {
			t.Errorf("%v: array %v %s", c.mode, got.Arr, got.ArrText)
		}
		if got.NullArr != nil || got.EmptyArr == nil || len(got.EmptyArr) != 0 {
			t.Errorf("%v: NULL array %#v, empty array %#v", c.mode, got.NullArr, got.EmptyArr)
		}
		if !reflect.DeepEqual(got.NullElem, []uuid.UUID{u, {}}) {
			t.Errorf("%v: array with a NULL element %v", c.mode, got.NullElem)
		}
	}
}

// Stored and read back from a table, including a NULL column read into a *uuid.UUID.
func TestTableRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := pool(t, true)
	conn, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release() // a temporary table lives on its connection
	if _, err := conn.Exec(ctx, `CREATE TEMP TABLE rt (id uuid PRIMARY KEY, ref uuid, refs uuid[])`); err != nil {
		t.Fatal(err)
	}
	a, b := uuid.New(), uuid.New()
	var none *uuid.UUID
	if _, err := conn.Exec(ctx, `INSERT INTO rt SELECT * FROM unnest($1::uuid[], $2::uuid[]) AS x(id, ref), LATERAL (SELECT $3::uuid[]) r`,
		[]uuid.UUID{a, b}, []*uuid.UUID{&b, none}, []uuid.UUID{a}); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT id, ref, refs FROM rt ORDER BY ref NULLS LAST`)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID   uuid.UUID
		Ref  *uuid.UUID
		Refs []uuid.UUID
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != a || got[0].Ref == nil || *got[0].Ref != b || got[1].ID != b || got[1].Ref != nil ||
		!reflect.DeepEqual(got[0].Refs, []uuid.UUID{a}) {
		t.Fatalf("rows %+v", got)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM rt WHERE id = ANY($1) AND ref IS NOT DISTINCT FROM $2`, []uuid.UUID{a}, &b).Scan(&n); err != nil || n != 1 {
		t.Fatalf("lookup by uuid: %d, %v", n, err)
	}
}
