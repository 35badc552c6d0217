package main

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// connInfo is go-plugin's plugin.ConnInfo, built from its .proto the way
// a plugin in another language compiles it, without go-plugin's Go code
// (which is internal to go-plugin):
//
//	message ConnInfo {
//	  uint32 service_id = 1;
//	  string network = 2;
//	  string address = 3;
//	  // 4: Knock knock, for go-plugin's multiplexing, which the host
//	  // does not use.
//	}
var connInfo = func() protoreflect.MessageDescriptor {
	field := func(name string, n int32, t descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{
			Name: proto.String(name), Number: proto.Int32(n), Type: t.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
		}
	}
	fd, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name:    proto.String("bareplugin/grpc_broker.proto"),
		Package: proto.String("plugin"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("ConnInfo"),
			Field: []*descriptorpb.FieldDescriptorProto{
				field("service_id", 1, descriptorpb.FieldDescriptorProto_TYPE_UINT32),
				field("network", 2, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				field("address", 3, descriptorpb.FieldDescriptorProto_TYPE_STRING),
			},
		}},
	}, nil)
	if err != nil {
		panic(err)
	}
	return fd.Messages().Get(0)
}()

// brokerService is plugin.GRPCBroker:
//
//	service GRPCBroker {
//	  rpc StartStream(stream ConnInfo) returns (stream ConnInfo);
//	}
var brokerService = grpc.ServiceDesc{
	ServiceName: "plugin.GRPCBroker",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{
		StreamName:    "StartStream",
		Handler:       func(srv any, stream grpc.ServerStream) error { return srv.(*broker).startStream(stream) },
		ServerStreams: true,
		ClientStreams: true,
	}},
}

// broker keeps what the host announces on the broker's stream: where
// each of its services listens, by service id.
type broker struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced when an address arrives
	addrs   map[uint32][2]string
}

func newBroker() *broker {
	return &broker{changed: make(chan struct{}), addrs: map[uint32][2]string{}}
}

// startStream serves the stream the host opens as soon as it has
// connected, until the host ends it: the host sends a ConnInfo for each
// service it starts, which may arrive before or after the call that
// needs it.
func (b *broker) startStream(stream grpc.ServerStream) error {
	for {
		m := dynamicpb.NewMessage(connInfo)
		if err := stream.RecvMsg(m); err != nil {
			return err
		}
		fields := connInfo.Fields()
		id := uint32(m.Get(fields.ByName("service_id")).Uint())
		network := m.Get(fields.ByName("network")).String()
		address := m.Get(fields.ByName("address")).String()
		b.mu.Lock()
		b.addrs[id] = [2]string{network, address}
		close(b.changed)
		b.changed = make(chan struct{})
		b.mu.Unlock()
	}
}

// wait returns where the service id listens, once the host has said.
func (b *broker) wait(ctx context.Context, id uint32) (network, address string, err error) {
	for {
		b.mu.Lock()
		addr, ok := b.addrs[id]
		changed := b.changed
		b.mu.Unlock()
		if ok {
			return addr[0], addr[1], nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
}
