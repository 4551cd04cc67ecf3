package kv

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Messages are most of the file, and JSON text compresses well, so message
// and session records are stored compressed: a format byte, then a zstd
// frame of the record's JSON. Records written before compression are plain JSON, which
// always starts with '{', so the first byte tells the two apart and files of
// older versions read without a migration (their old records stay as they
// are; new and rewritten ones are compressed).
//
// One message is a few hundred bytes, too little for zstd to find much to
// reuse within it, so once the store has written dictAfter records it takes
// a dictionary: the JSON of recent records (field names, roles, model
// names, projects, the user's recurring words; session records are sampled
// with the messages, about one in twenty), kept in the meta bucket and given
// to zstd as raw history. Frames name their dictionary by id, so a record
// written before the dictionary existed still reads. Measured on generated
// sessions, message records shrank to 0.72 of their JSON without a
// dictionary and to 0.29 with one (0.42 on SciFact abstracts and CoSQA
// code, against 0.57 and 0.65 without).
const (
	formatZstd byte = 0x01 // zstd frame of the JSON follows
	formatJSON byte = '{'  // the record is the JSON itself
)

const (
	dictAfter     = 1000     // records compressed without a dictionary before one is taken
	dictBytes     = 32 << 10 // size of the dictionary
	dictSampleMax = 1 << 10  // at most this much of one record goes into the dictionary
	// maxRecordBytes bounds what one compressed record may expand to, so a
	// corrupt record cannot make a reader allocate without limit. Ingest
	// caps a message far below it.
	maxRecordBytes = 64 << 20
)

// metaDict is the meta key of the dictionary: its id (4 bytes, big endian),
// then its content.
const metaDict = "records.zstd.dict"

// codec compresses and expands message records with one dictionary (or
// none). EncodeAll and DecodeAll are safe for concurrent use and reuse their
// buffers between calls. A codec never changes: the store swaps in a new one
// when it takes a dictionary.
type codec struct {
	enc    *zstd.Encoder
	dec    *zstd.Decoder
	dictID uint32 // 0: no dictionary

	// Without a dictionary, recent records are sampled towards one.
	mu      sync.Mutex
	encoded int
	samples []byte
}

func newCodec(dictID uint32, dict []byte) (*codec, error) {
	// The fastest level: records are compressed on the committer, the one
	// goroutine every write waits for, and on generated message records the
	// default level measured a seventh smaller without a dictionary and no
	// smaller with one, at two to three times the cost.
	eopts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true)}
	dopts := []zstd.DOption{zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxRecordBytes)}
	if dictID != 0 {
		eopts = append(eopts, zstd.WithEncoderDictRaw(dictID, dict))
		dopts = append(dopts, zstd.WithDecoderDictRaw(dictID, dict))
	}
	enc, err := zstd.NewWriter(nil, eopts...)
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, dopts...)
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &codec{enc: enc, dec: dec, dictID: dictID}, nil
}

// loadCodec returns the codec for the dictionary stored in btx (none if
// there is none yet).
func loadCodec(t txn) (*codec, error) {
	var id uint32
	var dict []byte
	if b := t.bucket(bucketMeta); b != nil {
		if v := b.Get([]byte(metaDict)); len(v) > 4 {
			id, dict = binary.BigEndian.Uint32(v), append([]byte(nil), v[4:]...)
		}
	}
	if id == 0 {
		dict = nil
	}
	return newCodec(id, dict)
}

// encode returns the stored form of v: compressed, or plain JSON when
// compression would not make it smaller (very short records).
func (c *codec) encode(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %T: %w", v, err)
	}
	return c.compress(raw), nil
}

// compress returns the stored form of the record JSON raw (encode's, or
// expand's of another store: copy.go moves records between stores so).
func (c *codec) compress(raw []byte) []byte {
	if c.dictID == 0 {
		c.sample(raw)
	}
	out := make([]byte, 1, 1+len(raw)/2)
	out[0] = formatZstd
	out = c.enc.EncodeAll(raw, out)
	if len(out) >= len(raw) {
		return raw
	}
	return out
}

// expand returns the JSON of a stored record of either form.
func (c *codec) expand(stored []byte) ([]byte, error) {
	switch {
	case len(stored) > 0 && stored[0] == formatZstd:
		raw, err := c.dec.DecodeAll(stored[1:], nil)
		if err != nil {
			return nil, fmt.Errorf("expand record: %w", err)
		}
		return raw, nil
	case len(stored) > 0 && stored[0] != formatJSON:
		return nil, fmt.Errorf("unknown record format %#x", stored[0])
	}
	return stored, nil
}

// decode reads a stored record of either form into v.
func (c *codec) decode(stored []byte, v any) error {
	raw, err := c.expand(stored)
	if err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode %T: %w", v, err)
	}
	return nil
}

// sample keeps the beginning of raw among the recent samples (at most
// 2*dictBytes of them) and counts it.
func (c *codec) sample(raw []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.encoded++
	if len(c.samples)+dictSampleMax > 2*dictBytes {
		c.samples = append(c.samples[:0], c.samples[len(c.samples)-dictBytes:]...)
	}
	c.samples = append(c.samples, raw[:min(len(raw), dictSampleMax)]...)
}

// dictionary returns the content of a dictionary once enough records were
// sampled, nil before.
func (c *codec) dictionary() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dictID != 0 || c.encoded < dictAfter || len(c.samples) < dictBytes {
		return nil
	}
	return append([]byte(nil), c.samples[len(c.samples)-dictBytes:]...)
}

// takeDictionary stores a dictionary of the sampled records and swaps in a
// codec that uses it, once enough records were written. It runs on the
// committer, between groups: no write is in flight, and a reader that could
// see a record compressed with the dictionary began after the swap, so it
// loads the new codec. Failing to take one is not an error: records stay
// compressed without it, and the next open tries again.
func (s *Store) takeDictionary() {
	c := s.codec.Load()
	if s.dictTried || c.dictID != 0 {
		return
	}
	dict := c.dictionary()
	if dict == nil {
		return
	}
	s.dictTried = true
	const id = 1 // the store's first (and so far only) dictionary
	nc, err := newCodec(id, dict)
	if err != nil {
		return
	}
	err = s.be.update(context.Background(), func(t txn) error {
		return t.bucket(bucketMeta).Put([]byte(metaDict), append(binary.BigEndian.AppendUint32(nil, id), dict...))
	})
	if err != nil {
		return
	}
	s.codec.Store(nc)
}
