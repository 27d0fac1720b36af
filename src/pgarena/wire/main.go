// The wire observer: a TCP proxy between one stack and PostgreSQL that reads the PostgreSQL protocol (v3) in
// both directions and counts, per connection, what the driver sends and how often it waits for the server.
//
// Messages are framed by their 5-byte header (type, length) and forwarded byte for byte as soon as they are
// read; the bodies pgarena needs (Parse, Bind, Execute, Query, Close, ReadyForQuery, the startup packet) are
// decoded with github.com/jackc/pgx/v5/pgproto3. Counting never changes what passes: a body it cannot decode
// is forwarded and counted under "undecoded".
//
// A round trip is a flight of client messages that starts after the server has answered (any message but
// the asynchronous NoticeResponse, ParameterStatus and NotificationResponse) since the client last wrote: the
// client had to wait for the server before it could go on. Flights before the first ReadyForQuery are the
// connection's set-up and counted apart. A flight carrying more than one statement (Execute or Query) is
// pipelined; a sync point (Sync or Query) sent while another is unanswered is counted too.
//
// Usage: wire-observer -upstream HOST:PORT [-listen 127.0.0.1:0] [-control 127.0.0.1:0] [-ready FILE] [-record FILE]
// -ready names a file the observer writes, once both addresses listen, as {"listen": ..., "control": ...};
// -record names a file that gets every message as one line "<connection> <C|S> <hex of the whole message>"
// (C: from the client; the startup packets are not recorded), the fixtures of the unit tests.
// GET /snapshot on the control address returns every connection's cumulative counters as JSON, with the
// connections open now and the most open at once since the previous snapshot; the peaks (statements per
// flight, unanswered sync points, open connections) are reset by each snapshot, so that a caller can read the
// peak of one phase.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"
)

const maxStatementChars = 400 // statement texts are kept up to this many characters

var clientNames = map[byte]string{
	'B': "Bind", 'C': "Close", 'D': "Describe", 'E': "Execute", 'F': "FunctionCall", 'H': "Flush", 'P': "Parse",
	'Q': "Query", 'S': "Sync", 'X': "Terminate", 'd': "CopyData", 'c': "CopyDone", 'f': "CopyFail",
	'p': "PasswordMessage",
}

var serverNames = map[byte]string{
	'1': "ParseComplete", '2': "BindComplete", '3': "CloseComplete", 'A': "NotificationResponse",
	'C': "CommandComplete", 'D': "DataRow", 'E': "ErrorResponse", 'G': "CopyInResponse", 'H': "CopyOutResponse",
	'I': "EmptyQueryResponse", 'K': "BackendKeyData", 'N': "NoticeResponse", 'R': "Authentication",
	'S': "ParameterStatus", 'T': "RowDescription", 'Z': "ReadyForQuery", 'n': "NoData", 's': "PortalSuspended",
	't': "ParameterDescription", 'v': "NegotiateProtocolVersion", 'W': "CopyBothResponse", 'c': "CopyDone",
	'd': "CopyData",
}

// Counters are one connection's cumulative counts; bytes are whole messages including headers.
type Counters struct {
	ClientMessages       map[string]int64 `json:"client_messages"`
	ServerMessages       map[string]int64 `json:"server_messages"`
	BytesToServer        int64            `json:"bytes_to_server"`
	BytesToClient        int64            `json:"bytes_to_client"`
	RoundTrips           int64            `json:"round_trips"`
	SetupRoundTrips      int64            `json:"setup_round_trips"`
	PipelinedFlights     int64            `json:"pipelined_flights"`
	SyncsWhileWaiting    int64            `json:"syncs_while_waiting"`
	ParsedNamed          int64            `json:"parsed_named"`
	ParsedUnnamed        int64            `json:"parsed_unnamed"`
	BindsFirstUse        int64            `json:"binds_first_use"`
	BindsReused          int64            `json:"binds_reused"`
	BindsUnnamed         int64            `json:"binds_unnamed"`
	Executed             map[string]int64 `json:"executed"`
	Undecoded            int64            `json:"undecoded"`
	PeakFlightStatements int64            `json:"peak_flight_statements"`
	PeakUnansweredSyncs  int64            `json:"peak_unanswered_syncs"`
}

// Connection is one client connection through the observer and its protocol state.
type Connection struct {
	mu          sync.Mutex
	ID          int64             `json:"id"`
	Closed      bool              `json:"closed"`
	Observable  bool              `json:"observable"`
	Counts      Counters          `json:"counts"`
	ready       bool              // the first ReadyForQuery was seen: set-up is over
	serverSpoke bool              // the server answered since the client last wrote
	unanswered  int64             // sync points sent and not yet answered by ReadyForQuery
	flight      int64             // statements in the current flight
	statements  map[string]string // prepared statement name -> text
	portals     map[string]string // portal name -> text
	used        map[string]bool   // named statements bound at least once
}

type registry struct {
	mu       sync.Mutex
	next     int64
	conns    []*Connection
	open     int64 // connections open now
	peakOpen int64 // most open at once since the last snapshot
	recordMu sync.Mutex
	record   io.Writer // nil: nothing recorded
}

// recorder wraps a counting function so that each message is also written to the record file.
func (r *registry) recorder(id int64, side string, count func(byte, []byte)) func(byte, []byte) {
	if r.record == nil {
		return count
	}
	return func(kind byte, body []byte) {
		r.recordMu.Lock()
		fmt.Fprintf(r.record, "%d %s %02x%08x%x\n", id, side, kind, len(body)+4, body)
		r.recordMu.Unlock()
		count(kind, body)
	}
}

func newConnection(id int64) *Connection {
	return &Connection{ID: id, Observable: true, serverSpoke: true,
		Counts:     Counters{ClientMessages: map[string]int64{}, ServerMessages: map[string]int64{}, Executed: map[string]int64{}},
		statements: map[string]string{}, portals: map[string]string{}, used: map[string]bool{}}
}

func clip(text string) string {
	if len(text) > maxStatementChars {
		return text[:maxStatementChars]
	}
	return text
}

// count adds one message to a side's counts by its type's name (hex when unknown) and its bytes.
func count(messages map[string]int64, bytes *int64, names map[byte]string, kind byte, body []byte) {
	name, known := names[kind]
	if !known {
		name = fmt.Sprintf("0x%02x", kind)
	}
	messages[name]++
	*bytes += int64(len(body)) + 5
}

// Client records one message from the client (type byte, body); its bytes count the 5-byte header.
func (c *Connection) Client(kind byte, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count(c.Counts.ClientMessages, &c.Counts.BytesToServer, clientNames, kind, body)
	if c.serverSpoke && kind != 'X' {
		if c.ready {
			c.Counts.RoundTrips++
		} else {
			c.Counts.SetupRoundTrips++
		}
		c.serverSpoke = false
		c.flight = 0
	}
	switch kind {
	case 'P':
		var m pgproto3.Parse
		if m.Decode(body) != nil {
			c.Counts.Undecoded++
			return
		}
		c.statements[m.Name] = clip(m.Query)
		if m.Name == "" {
			c.Counts.ParsedUnnamed++
		} else {
			c.Counts.ParsedNamed++
			delete(c.used, m.Name)
		}
	case 'B':
		var m pgproto3.Bind
		if m.Decode(body) != nil {
			c.Counts.Undecoded++
			return
		}
		c.portals[m.DestinationPortal] = c.statements[m.PreparedStatement]
		switch {
		case m.PreparedStatement == "":
			c.Counts.BindsUnnamed++
		case c.used[m.PreparedStatement]:
			c.Counts.BindsReused++
		default:
			c.Counts.BindsFirstUse++
			c.used[m.PreparedStatement] = true
		}
	case 'C':
		var m pgproto3.Close
		if m.Decode(body) == nil && m.ObjectType == 'S' {
			delete(c.statements, m.Name)
			delete(c.used, m.Name)
		}
	case 'E':
		var m pgproto3.Execute
		if m.Decode(body) != nil {
			c.Counts.Undecoded++
			return
		}
		c.statement(c.portals[m.Portal])
	case 'Q':
		var m pgproto3.Query
		if m.Decode(body) != nil {
			c.Counts.Undecoded++
			return
		}
		c.statement(clip(m.String))
		c.sync()
	case 'S':
		c.sync()
	}
}

func (c *Connection) statement(text string) {
	c.Counts.Executed[text]++
	c.flight++
	if c.flight == 2 {
		c.Counts.PipelinedFlights++
	}
	if c.flight > c.Counts.PeakFlightStatements {
		c.Counts.PeakFlightStatements = c.flight
	}
}

func (c *Connection) sync() {
	c.unanswered++
	if c.unanswered > 1 {
		c.Counts.SyncsWhileWaiting++
	}
	if c.unanswered > c.Counts.PeakUnansweredSyncs {
		c.Counts.PeakUnansweredSyncs = c.unanswered
	}
}

// Server records one message from the server.
func (c *Connection) Server(kind byte, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count(c.Counts.ServerMessages, &c.Counts.BytesToClient, serverNames, kind, body)
	switch kind {
	case 'N', 'S', 'A':
		return
	case 'Z':
		c.ready = true
		if c.unanswered > 0 {
			c.unanswered--
		}
	}
	c.serverSpoke = true
}

// relay copies framed messages from src to dst, reporting each to record, and flushes whenever src has no
// more bytes buffered (so a flight leaves as it came).
func relay(src *bufio.Reader, dst *bufio.Writer, record func(byte, []byte)) error {
	for {
		head, err := src.Peek(5)
		if err != nil {
			return err
		}
		length := int(binary.BigEndian.Uint32(head[1:]))
		if length < 4 {
			return fmt.Errorf("invalid message length %d", length)
		}
		kind := head[0]
		message := make([]byte, length+1)
		if _, err := io.ReadFull(src, message); err != nil {
			return err
		}
		if _, err := dst.Write(message); err != nil {
			return err
		}
		record(kind, message[5:])
		if src.Buffered() == 0 {
			if err := dst.Flush(); err != nil {
				return err
			}
		}
	}
}

// startup forwards the client's untyped packets (SSLRequest, GSSEncRequest, StartupMessage) and the
// server's one-byte answers to the first two; false when the session is encrypted and cannot be read.
func startup(client *bufio.Reader, server net.Conn, clientConn net.Conn) (bool, error) {
	for {
		head, err := client.Peek(8)
		if err != nil {
			return false, err
		}
		length := int(binary.BigEndian.Uint32(head[:4]))
		code := binary.BigEndian.Uint32(head[4:8])
		packet := make([]byte, length)
		if _, err := io.ReadFull(client, packet); err != nil {
			return false, err
		}
		if _, err := server.Write(packet); err != nil {
			return false, err
		}
		if code != 80877103 && code != 80877104 { // not SSLRequest, not GSSEncRequest
			var m pgproto3.StartupMessage
			_ = m.Decode(packet[4:]) // CancelRequest and others pass through undecoded
			return true, nil
		}
		answer := make([]byte, 1)
		if _, err := io.ReadFull(server, answer); err != nil {
			return false, err
		}
		if _, err := clientConn.Write(answer); err != nil {
			return false, err
		}
		if answer[0] != 'N' {
			return false, nil
		}
	}
}

func (r *registry) serve(clientConn net.Conn, upstream string) {
	defer clientConn.Close()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		log.Printf("dial %s: %v", upstream, err)
		return
	}
	defer server.Close()
	r.mu.Lock()
	r.next++
	conn := newConnection(r.next)
	r.conns = append(r.conns, conn)
	r.open++
	if r.open > r.peakOpen {
		r.peakOpen = r.open
	}
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.open--; r.mu.Unlock() }()
	defer func() { conn.mu.Lock(); conn.Closed = true; conn.mu.Unlock() }()
	fromClient := bufio.NewReaderSize(clientConn, 64*1024)
	readable, err := startup(fromClient, server, clientConn)
	if err != nil {
		return
	}
	if !readable { // encrypted: pass the bytes through, count nothing
		conn.mu.Lock()
		conn.Observable = false
		conn.mu.Unlock()
		go func() { _, _ = io.Copy(server, fromClient); server.Close() }()
		_, _ = io.Copy(clientConn, server)
		return
	}
	done := make(chan struct{})
	go func() {
		_ = relay(fromClient, bufio.NewWriterSize(server, 64*1024), r.recorder(conn.ID, "C", conn.Client))
		server.Close()
		close(done)
	}()
	_ = relay(bufio.NewReaderSize(server, 64*1024), bufio.NewWriterSize(clientConn, 64*1024),
		r.recorder(conn.ID, "S", conn.Server))
	clientConn.Close()
	<-done
}

func (r *registry) snapshot(w http.ResponseWriter, _ *http.Request) {
	r.mu.Lock()
	conns := append([]*Connection(nil), r.conns...)
	open, peakOpen := r.open, r.peakOpen
	r.peakOpen = r.open
	r.mu.Unlock()
	out := make([]json.RawMessage, 0, len(conns))
	for _, c := range conns {
		c.mu.Lock()
		data, err := json.Marshal(c)
		c.Counts.PeakFlightStatements, c.Counts.PeakUnansweredSyncs = 0, 0
		c.mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out = append(out, data)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"connections": out, "open_connections": open,
		"peak_open_connections": peakOpen})
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address the stack connects to")
	upstream := flag.String("upstream", "", "PostgreSQL's host:port")
	control := flag.String("control", "127.0.0.1:0", "address of the /snapshot endpoint")
	ready := flag.String("ready", "", "file to write the listening addresses to, as JSON")
	record := flag.String("record", "", "file to record every message to (hex, one per line)")
	flag.Parse()
	r := &registry{}
	if *record != "" {
		file, err := os.Create(*record)
		if err != nil {
			log.Fatal(err)
		}
		defer file.Close()
		r.record = file
	}
	listener, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	controlListener, err := net.Listen("tcp", *control)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/snapshot", r.snapshot)
	go func() { log.Fatal(http.Serve(controlListener, mux)) }()
	addresses, _ := json.Marshal(map[string]string{"listen": listener.Addr().String(),
		"control": controlListener.Addr().String()})
	fmt.Println(string(addresses))
	if *ready != "" {
		if err := os.WriteFile(*ready+".tmp", addresses, 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*ready+".tmp", *ready); err != nil {
			log.Fatal(err)
		}
	}
	for {
		clientConn, err := listener.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go r.serve(clientConn, *upstream)
	}
}
