CREATE TABLE readings (
    id bigserial PRIMARY KEY,
    value integer NOT NULL,
    price numeric,
    at timestamptz,
    note text,
    tags text[]
);

CREATE FUNCTION same_array(x anyarray) RETURNS anyarray LANGUAGE sql AS $$ SELECT x $$;
