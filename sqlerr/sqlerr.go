// Package sqlerr is the one error type of streamdb: an error that carries the
// PostgreSQL SQLSTATE it was made with. Errors get their code where they are
// made; only wire/ turns them into ErrorResponse messages.
package sqlerr

import (
	"errors"
	"fmt"
)

// SQLSTATE codes used across streamdb, as PostgreSQL assigns them.
const (
	SyntaxError             = "42601"
	InvalidName             = "42602"
	InsufficientPrivilege   = "42501"
	UndefinedTable          = "42P01"
	UndefinedColumn         = "42703"
	InvalidColumnReference  = "42P10"
	UndefinedObject         = "42704"
	UndefinedFunction       = "42883"
	AmbiguousFunction       = "42725"
	DatatypeMismatch        = "42804"
	DuplicateTable          = "42P07"
	DuplicateObject         = "42710"
	DuplicateColumn         = "42701"
	AmbiguousColumn         = "42702"
	GroupingError           = "42803"
	WindowingError          = "42P20"
	CardinalityViolation    = "21000"
	InvalidTextRep          = "22P02"
	InvalidBinaryRep        = "22P03"
	NumericOutOfRange       = "22003"
	DivisionByZero          = "22012"
	InvalidArgumentForPower = "2201F"
	InvalidParameterValue   = "22023"
	NullValueNotAllowed     = "22004"
	InvalidDatetimeFormat   = "22007"
	DatetimeFieldOverflow   = "22008"
	StringDataRightTrunc    = "22001"
	BadCopyFileFormat       = "22P04"
	CharNotInRepertoire     = "22021"
	NotNullViolation        = "23502"
	DependentObjectsExist   = "2BP01"
	WrongObjectType         = "42809"
	CantChangeRuntimeParam  = "55P02"
	ProtocolViolation       = "08P01"
	ConnectionException     = "08000"
	FeatureNotSupported     = "0A000"
	ObjectNotInPrereqState  = "55000"
	QueryCanceled           = "57014"
	AdminShutdown           = "57P01"
	ProgramLimitExceeded    = "54000"
	InsufficientResources   = "53000"
	TooManyConnections      = "53300"
	OutOfMemory             = "53200"
	InvalidCursorName       = "34000"
	InvalidSchemaName       = "3F000"
	InvalidCatalogName      = "3D000"
	InvalidSQLStatementName = "26000"
	DuplicatePreparedStmt   = "42P05"
	DuplicateCursor         = "42P03"
	InvalidAuthorization    = "28000"
	InvalidPassword         = "28P01"
	ReservedName            = "42939"
	ObjectInUse             = "55006"
	DataCorrupted           = "XX001"
	Internal                = "XX000"
	InFailedTransaction     = "25P02"
	InvalidTxState          = "25000"
	DeadlockDetected        = "40P01"
	ActiveSQLTransaction    = "25001"
	NoActiveSQLTransaction  = "25P01"
	InvalidSavepointSpec    = "3B001"
	UndefinedParameter      = "42P02"
	InvalidTableDefinition  = "42P16"
	InvalidObjectDefinition = "42P17"
	IOError                 = "58030"
)

// Error is an error with a SQLSTATE.
type Error struct {
	Code   string // SQLSTATE, five characters
	Msg    string
	Detail string
	Hint   string
	// Position is a 1-based character offset into the statement, 0 if none.
	Position int
}

func (e *Error) Error() string { return e.Msg }

// New makes an Error with a formatted message.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap gives err the code unless it already carries one.
func Wrap(code string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: code, Msg: err.Error()}
}

// Code returns the SQLSTATE carried by err, or XX000 if it has none.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// As returns err as an *Error, giving code XX000 to errors without one.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: Internal, Msg: err.Error()}
}
