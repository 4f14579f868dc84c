CREATE TABLE events (
    id uuid PRIMARY KEY,
    kind varchar(20) NOT NULL,
    payload jsonb NOT NULL,
    notification_settings_override jsonb,
    happened_at timestamptz NOT NULL,
    amount numeric
);
