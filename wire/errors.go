package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"os"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/streamdb/streamdb/sqlerr"
)

// Severities of ErrorResponse.
const (
	severityError = "ERROR"
	severityFatal = "FATAL"
)

// statementError turns an error from the engine into the *sqlerr.Error sent
// to the client. A bare context error (the engine passed ctx.Err() through)
// becomes 57014, as PostgreSQL reports a canceled statement.
func statementError(err error) *sqlerr.Error {
	var e *sqlerr.Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, context.Canceled):
		return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to user request")
	case errors.Is(err, context.DeadlineExceeded):
		return sqlerr.New(sqlerr.QueryCanceled, "canceling statement due to statement timeout")
	}
	return sqlerr.As(err)
}

// errorResponse flattens err into an ErrorResponse of the given severity.
func errorResponse(severity string, err error) *pgproto3.ErrorResponse {
	e := statementError(err)
	return &pgproto3.ErrorResponse{
		Severity:            severity,
		SeverityUnlocalized: severity,
		Code:                e.Code,
		Message:             e.Msg,
		Detail:              e.Detail,
		Hint:                e.Hint,
		Position:            int32(e.Position),
	}
}

// noticeResponse is a NoticeResponse carrying msg.
func noticeResponse(msg string) *pgproto3.NoticeResponse {
	return &pgproto3.NoticeResponse{
		Severity:            "NOTICE",
		SeverityUnlocalized: "NOTICE",
		Code:                "00000",
		Message:             msg,
	}
}

// isConnGone reports whether a receive or send error means the peer is gone
// (or the connection was closed under us), so there is nobody to tell.
func isConnGone(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne)
}

// receiveError classifies an error from Backend.Receive: nil if the peer is
// simply gone, otherwise the FATAL protocol violation to report.
func receiveError(err error, maxLen int) *sqlerr.Error {
	var tooBig *pgproto3.ExceededMaxBodyLenErr
	switch {
	case errors.As(err, &tooBig):
		return sqlerr.New(sqlerr.ProtocolViolation,
			"message of %d bytes exceeds the maximum message size of %d bytes", tooBig.ActualBodyLen, maxLen)
	case isConnGone(err):
		return nil
	}
	return sqlerr.New(sqlerr.ProtocolViolation, "invalid frontend message: %v", err)
}

// errShutdown is reported to clients when the server shuts down.
var errShutdown = sqlerr.New(sqlerr.AdminShutdown, "terminating connection due to administrator command")
