-- accounts holds one column per PostgreSQL type the plugin maps.
CREATE TABLE accounts (
    id bigserial PRIMARY KEY,
    ticket serial NOT NULL,
    handle varchar(40) NOT NULL,
    name text NOT NULL,
    bio text,
    age int2,
    score int4 NOT NULL,
    visits int8,
    active bool NOT NULL,
    ratio float4,
    weight float8 NOT NULL,
    balance numeric(12, 2) NOT NULL,
    avatar bytea,
    token uuid NOT NULL,
    settings json,
    profile jsonb NOT NULL,
    created_at timestamp NOT NULL,
    updated_at timestamptz,
    birthday date,
    tags text[] NOT NULL,
    lucky int4[]
);
