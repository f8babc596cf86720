package fakeregistry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// serialized is a Protobuf schema as ?format=serialized asks for it, as Confluent's registry
// answers it: the standard base64 of its FileDescriptorProto (Confluent's clients deserialize
// with it). A schema registered that way (as those clients register it) is returned as is; one
// registered as .proto text is compiled, its imports from its references. Other types, and a
// schema that does not compile, are returned as stored. It needs r.mu held.
func (r *Registry) serialized(s stored) string {
	if s.schemaType != "PROTOBUF" || isDescriptor(s.schema) {
		return s.schema
	}
	files := map[string]string{}
	if err := r.refFiles(s.refs, files, 0); err != nil {
		return s.schema
	}
	const main = "fakeregistry-schema.proto"
	files[main] = s.schema
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(protocompile.ResolverFunc(
		func(path string) (protocompile.SearchResult, error) {
			t, ok := files[path]
			if !ok {
				return protocompile.SearchResult{}, protoregistry.NotFound
			}
			if fd, ok := descriptorOf(t); ok {
				fd.Name = proto.String(path)
				return protocompile.SearchResult{Proto: fd}, nil
			}
			return protocompile.SearchResult{Source: strings.NewReader(t)}, nil
		}))}
	out, err := c.Compile(context.Background(), main)
	if err != nil {
		return s.schema
	}
	b, err := proto.Marshal(protodesc.ToFileDescriptorProto(out[0]))
	if err != nil {
		return s.schema
	}
	return base64.StdEncoding.EncodeToString(b)
}

// refFiles adds the referenced schemas, and theirs, to files by import path.
func (r *Registry) refFiles(refs []Reference, files map[string]string, depth int) error {
	if depth > 32 {
		return errors.New("references nested too deep")
	}
	for _, ref := range refs {
		if _, ok := files[ref.Name]; ok {
			continue
		}
		v, err := r.lookupVersion(ref.Subject, strconv.Itoa(ref.Version))
		if err != nil {
			return fmt.Errorf("reference %s: %w", ref.Name, err)
		}
		s := r.schemas[v.id-1]
		files[ref.Name] = s.schema
		if err := r.refFiles(s.refs, files, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func isDescriptor(t string) bool {
	_, ok := descriptorOf(t)
	return ok
}

// descriptorOf reads t as the base64 of a FileDescriptorProto.
func descriptorOf(t string) (*descriptorpb.FileDescriptorProto, bool) {
	t = strings.TrimSpace(t)
	if t == "" || strings.ContainsAny(t, " \t\r\n;{\"") {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil, false
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(b, fd) != nil {
		return nil, false
	}
	return fd, true
}
