-- +goose Up
-- What each incident step actually told, for the dashboard: its emails are the notifications rows of the
-- incident and kind (now found by index), its operator notification the event recorded here, in the same
-- transaction as the step's claim. event_id has no foreign key: events are pruned by retention, and a step
-- whose event is gone is shown as such.
CREATE TABLE incident_operator_events (
    incident_id uuid NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    kind        text NOT NULL,
    event_id    uuid NOT NULL,
    PRIMARY KEY (incident_id, kind)
);
CREATE INDEX notifications_incident_idx ON notifications (incident_id, kind) WHERE incident_id IS NOT NULL;

-- +goose Down
DROP INDEX notifications_incident_idx;
DROP TABLE incident_operator_events;
