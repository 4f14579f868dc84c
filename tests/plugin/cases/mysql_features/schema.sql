-- Every column type of sqlc's MySQL catalog that the plugin maps.
CREATE TABLE kinds (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  flag TINYINT(1) NOT NULL,
  maybe BOOL,
  tiny TINYINT NOT NULL,
  tiny_u TINYINT UNSIGNED,
  small SMALLINT NOT NULL,
  medium MEDIUMINT UNSIGNED,
  regular INT NOT NULL,
  big BIGINT,
  amount DECIMAL(10, 2) NOT NULL,
  ratio FLOAT,
  dbl DOUBLE NOT NULL,
  name VARCHAR(100) NOT NULL,
  code CHAR(3),
  body TEXT,
  data BLOB,
  bin BINARY(4),
  vbin VARBINARY(10),
  day DATE,
  at DATETIME NOT NULL,
  ts TIMESTAMP NULL,
  dur TIME,
  yr YEAR,
  doc JSON,
  mood ENUM('happy', 'so-so', 'sad') NOT NULL,
  tags SET('red', 'green', 'blue'),
  `bits` BIT(8)
);

CREATE TABLE notes (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  kind_id BIGINT UNSIGNED NOT NULL,
  note VARCHAR(200) NOT NULL,
  labels SET('x', 'y') NOT NULL,
  state ENUM('open', 'closed')
);

-- No AUTO_INCREMENT: an insert makes no id.
CREATE TABLE plain (
  k VARCHAR(10) NOT NULL PRIMARY KEY
);
