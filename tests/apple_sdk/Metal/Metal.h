// mpsgen's model of <Metal/Metal.h>: declarations only (see ../README.md).
#pragma once
#import <Foundation/Foundation.h>

typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
  return MTLSize{width, height, depth};
}
typedef struct {
  NSUInteger x, y, z;
} MTLOrigin;

typedef NS_ENUM(NSUInteger, MTLLanguageVersion){
    MTLLanguageVersion2_3 = (2 << 16) + 3,
    MTLLanguageVersion2_4 = (2 << 16) + 4,
    MTLLanguageVersion3_0 = (3 << 16) + 0,
    MTLLanguageVersion3_1 = (3 << 16) + 1,
    MTLLanguageVersion3_2 = (3 << 16) + 2,
};
typedef NS_ENUM(NSUInteger, MTLStorageMode){
    MTLStorageModeShared = 0,
    MTLStorageModeManaged = 1,
    MTLStorageModePrivate = 2,
};
typedef NS_OPTIONS(NSUInteger, MTLResourceOptions){
    MTLResourceCPUCacheModeDefaultCache = 0,
    MTLResourceStorageModeShared = MTLStorageModeShared << 4,
    MTLResourceStorageModeManaged = MTLStorageModeManaged << 4,
    MTLResourceStorageModePrivate = MTLStorageModePrivate << 4,
    MTLResourceOptionCPUCacheModeDefault = MTLResourceCPUCacheModeDefaultCache,
};
typedef NS_ENUM(NSUInteger, MTLCommandBufferStatus){
    MTLCommandBufferStatusNotEnqueued = 0, MTLCommandBufferStatusEnqueued = 1, MTLCommandBufferStatusCommitted = 2,
    MTLCommandBufferStatusScheduled = 3,   MTLCommandBufferStatusCompleted = 4, MTLCommandBufferStatusError = 5,
};
typedef NS_ENUM(NSUInteger, MTLDataType){
    MTLDataTypeNone = 0, MTLDataTypeFloat = 3, MTLDataTypeInt = 29, MTLDataTypeUInt = 33, MTLDataTypeBool = 53,
};
typedef NS_ENUM(NSUInteger, MTLDispatchType){
    MTLDispatchTypeSerial,
    MTLDispatchTypeConcurrent,
};
typedef NS_OPTIONS(NSUInteger, MTLBarrierScope){
    MTLBarrierScopeBuffers = 1 << 0,
};
typedef NS_ENUM(NSInteger, MTLCaptureDestination){
    MTLCaptureDestinationDeveloperTools = 1,
    MTLCaptureDestinationGPUTraceDocument = 2,
};

@protocol MTLDevice, MTLCommandQueue, MTLCommandBuffer, MTLLibrary, MTLFunction, MTLComputePipelineState;
@protocol MTLBuffer, MTLSharedEvent, MTLEvent, MTLArgumentEncoder, MTLComputeCommandEncoder, MTLBlitCommandEncoder;

@protocol MTLResource <NSObject>
@property(readonly) id<MTLDevice> device;
@property(copy) NSString* label;
@property(readonly) MTLStorageMode storageMode;
@property(readonly) NSUInteger allocatedSize;
@end

@protocol MTLBuffer <MTLResource>
@property(readonly) NSUInteger length;
- (void*)contents NS_RETURNS_INNER_POINTER;
- (void)didModifyRange:(NSRange)range;
@property(readonly) uint64_t gpuAddress;
@end

@interface MTLFunctionConstantValues : NSObject <NSCopying>
- (void)setConstantValue:(const void*)value type:(MTLDataType)type atIndex:(NSUInteger)index;
- (void)setConstantValue:(const void*)value type:(MTLDataType)type withName:(NSString*)name;
@end

@interface MTLCompileOptions : NSObject <NSCopying>
@property(copy) NSDictionary<NSString*, NSObject*>* preprocessorMacros;
@property(readwrite) BOOL fastMathEnabled;
@property(readwrite) MTLLanguageVersion languageVersion;
@end

@protocol MTLFunction <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) NSString* name;
- (id<MTLArgumentEncoder>)newArgumentEncoderWithBufferIndex:(NSUInteger)bufferIndex;
@end

@protocol MTLLibrary <NSObject>
- (id<MTLFunction>)newFunctionWithName:(NSString*)functionName;
- (id<MTLFunction>)newFunctionWithName:(NSString*)name
                        constantValues:(MTLFunctionConstantValues*)constantValues
                                 error:(NSError**)error;
@property(readonly) NSArray<NSString*>* functionNames;
@end

@protocol MTLComputePipelineState <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@property(readonly) NSUInteger staticThreadgroupMemoryLength;
@end

@protocol MTLArgumentEncoder <NSObject>
@property(readonly) NSUInteger encodedLength;
- (void)setArgumentBuffer:(id<MTLBuffer>)argumentBuffer offset:(NSUInteger)offset;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
@end

@protocol MTLCommandEncoder <NSObject>
@property(readonly) id<MTLDevice> device;
@property(copy) NSString* label;
- (void)endEncoding;
@end

@protocol MTLComputeCommandEncoder <MTLCommandEncoder>
@property(readonly) MTLDispatchType dispatchType;
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void*)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBufferOffset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBuffers:(const id<MTLBuffer>[])buffers offsets:(const NSUInteger[])offsets withRange:(NSRange)range;
- (void)setThreadgroupMemoryLength:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)dispatchThreads:(MTLSize)threadsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)useResource:(id<MTLResource>)resource usage:(NSUInteger)usage;
- (void)memoryBarrierWithScope:(MTLBarrierScope)scope;
@end

@protocol MTLBlitCommandEncoder <MTLCommandEncoder>
- (void)copyFromBuffer:(id<MTLBuffer>)sourceBuffer
             sourceOffset:(NSUInteger)sourceOffset
                 toBuffer:(id<MTLBuffer>)destinationBuffer
        destinationOffset:(NSUInteger)destinationOffset
                     size:(NSUInteger)size;
- (void)fillBuffer:(id<MTLBuffer>)buffer range:(NSRange)range value:(uint8_t)value;
@end

@protocol MTLEvent <NSObject>
@property(readonly) id<MTLDevice> device;
@end

@interface MTLSharedEventListener : NSObject
- (instancetype)initWithDispatchQueue:(dispatch_queue_t)dispatchQueue;
@end

typedef void (^MTLSharedEventNotificationBlock)(id<MTLSharedEvent>, uint64_t value);

@protocol MTLSharedEvent <MTLEvent>
- (void)notifyListener:(MTLSharedEventListener*)listener
               atValue:(uint64_t)value
                 block:(MTLSharedEventNotificationBlock)block;
- (BOOL)waitUntilSignaledValue:(uint64_t)value timeoutMS:(uint64_t)milliseconds;
@property(readwrite) uint64_t signaledValue;
@end

typedef void (^MTLCommandBufferHandler)(id<MTLCommandBuffer>);

@protocol MTLCommandBuffer <NSObject>
@property(readonly) id<MTLDevice> device;
@property(readonly) id<MTLCommandQueue> commandQueue;
@property(readonly) MTLCommandBufferStatus status;
@property(readonly) NSError* error;
- (void)enqueue;
- (void)commit;
- (void)waitUntilScheduled;
- (void)waitUntilCompleted;
- (void)addScheduledHandler:(MTLCommandBufferHandler)block;
- (void)addCompletedHandler:(MTLCommandBufferHandler)block;
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (id<MTLComputeCommandEncoder>)computeCommandEncoderWithDispatchType:(MTLDispatchType)dispatchType;
- (id<MTLBlitCommandEncoder>)blitCommandEncoder;
- (void)encodeSignalEvent:(id<MTLEvent>)event value:(uint64_t)value;
- (void)encodeWaitForEvent:(id<MTLEvent>)event value:(uint64_t)value;
@end

@protocol MTLCommandQueue <NSObject>
@property(readonly) id<MTLDevice> device;
- (id<MTLCommandBuffer>)commandBuffer;
- (id<MTLCommandBuffer>)commandBufferWithUnretainedReferences;
@end

@protocol MTLDevice <NSObject>
@property(readonly) NSString* name;
@property(readonly) uint64_t registryID;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
@property(readonly) NSUInteger currentAllocatedSize;
@property(readonly) NSUInteger maxBufferLength;
@property(readonly) BOOL hasUnifiedMemory;
@property(readonly) MTLSize maxThreadsPerThreadgroup;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytes:(const void*)pointer length:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytesNoCopy:(void*)pointer
                                   length:(NSUInteger)length
                                  options:(MTLResourceOptions)options
                              deallocator:(void (^)(void* pointer, NSUInteger length))deallocator;
- (id<MTLLibrary>)newLibraryWithSource:(NSString*)source options:(MTLCompileOptions*)options error:(NSError**)error;
- (id<MTLLibrary>)newLibraryWithURL:(NSURL*)url error:(NSError**)error;
- (id<MTLLibrary>)newDefaultLibrary;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                             error:(NSError**)error;
- (id<MTLSharedEvent>)newSharedEvent;
- (id<MTLEvent>)newEvent;
- (BOOL)supportsFamily:(NSInteger)gpuFamily;
@end

@interface MTLCaptureDescriptor : NSObject
@property(strong) id captureObject;
@property(assign) MTLCaptureDestination destination;
@property(copy) NSURL* outputURL;
@end

@interface MTLCaptureManager : NSObject
+ (MTLCaptureManager*)sharedCaptureManager;
- (BOOL)startCaptureWithDescriptor:(MTLCaptureDescriptor*)descriptor error:(NSError**)error;
- (void)stopCapture;
- (BOOL)supportsDestination:(MTLCaptureDestination)destination;
@property(readonly) BOOL isCapturing;
@end

extern "C" id<MTLDevice> MTLCreateSystemDefaultDevice(void) NS_RETURNS_RETAINED;
extern "C" NSArray<id<MTLDevice>>* MTLCopyAllDevices(void) NS_RETURNS_RETAINED;
