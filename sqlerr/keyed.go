package sqlerr

// UniqueViolation is a duplicate key of a table with a PRIMARY KEY.
const UniqueViolation = "23505"
