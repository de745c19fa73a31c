-- +goose Up
-- The operator's deliveries.exhausted report covers a window of time, one notification per subscription
-- whose deliveries expired in it; one shared receiver's outage can make that thousands. The report now goes
-- a batch of subscriptions per transaction: reporting_until is the end of the window being reported (NULL
-- when none is under way) and reporting_after the last subscription told of it; until moves to
-- reporting_until once the window's last batch is told.
ALTER TABLE operator_watermarks
    ADD COLUMN reporting_until timestamptz,
    ADD COLUMN reporting_after uuid;

-- +goose Down
ALTER TABLE operator_watermarks
    DROP COLUMN reporting_until,
    DROP COLUMN reporting_after;
