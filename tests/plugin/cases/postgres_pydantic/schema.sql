CREATE TABLE events (
    id uuid PRIMARY KEY,
    kind varchar(20) NOT NULL,
    payload jsonb NOT NULL,
    notification_settings_override jsonb,
    happened_at timestamptz NOT NULL,
    amount numeric
);

CREATE TYPE level AS ENUM ('debug', 'info', 'warn');

-- Column names that are attributes of pydantic.BaseModel.
CREATE TABLE settings (
    id int8 PRIMARY KEY,
    json jsonb NOT NULL,
    schema text NOT NULL,
    copy text,
    model_config int4 NOT NULL,
    level level NOT NULL
);
