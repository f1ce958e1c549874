// mpsgen's model of <MetalPerformanceShaders/MetalPerformanceShaders.h>: declarations only
// (see ../README.md).
#pragma once
#import <Metal/Metal.h>

typedef NSArray<NSNumber*> MPSShape;

typedef NS_OPTIONS(uint32_t, MPSDataType){
    MPSDataTypeInvalid = 0,
    MPSDataTypeFloatBit = 0x10000000,
    MPSDataTypeFloat32 = MPSDataTypeFloatBit | 32,
    MPSDataTypeFloat16 = MPSDataTypeFloatBit | 16,
    MPSDataTypeComplexBit = 0x01000000,
    MPSDataTypeComplexFloat32 = MPSDataTypeFloatBit | MPSDataTypeComplexBit | 64,
    MPSDataTypeComplexFloat16 = MPSDataTypeFloatBit | MPSDataTypeComplexBit | 32,
    MPSDataTypeSignedBit = 0x20000000,
    MPSDataTypeIntBit = MPSDataTypeSignedBit,
    MPSDataTypeInt4 = MPSDataTypeSignedBit | 4,
    MPSDataTypeInt8 = MPSDataTypeSignedBit | 8,
    MPSDataTypeInt16 = MPSDataTypeSignedBit | 16,
    MPSDataTypeInt32 = MPSDataTypeSignedBit | 32,
    MPSDataTypeInt64 = MPSDataTypeSignedBit | 64,
    MPSDataTypeUInt4 = 4,
    MPSDataTypeUInt8 = 8,
    MPSDataTypeUInt16 = 16,
    MPSDataTypeUInt32 = 32,
    MPSDataTypeUInt64 = 64,
    MPSDataTypeAlternateEncodingBit = 0x80000000,
    MPSDataTypeBool = MPSDataTypeAlternateEncodingBit | 8,
    MPSDataTypeBFloat16 = MPSDataTypeAlternateEncodingBit | MPSDataTypeFloat16,
    MPSDataTypeNormalizedBit = 0x40000000,
    MPSDataTypeUnorm1 = MPSDataTypeNormalizedBit | 1,
    MPSDataTypeUnorm8 = MPSDataTypeNormalizedBit | 8,
};

typedef struct {
  NSUInteger start;
  NSUInteger length;
} MPSDimensionSlice;

@interface MPSKernel : NSObject <NSCopying>
@property(readonly, retain) id<MTLDevice> device;
@property(copy) NSString* label;
@end

@interface MPSCommandBuffer : NSObject <MTLCommandBuffer>
+ (MPSCommandBuffer*)commandBufferWithCommandBuffer:(id<MTLCommandBuffer>)commandBuffer;
+ (MPSCommandBuffer*)commandBufferFromCommandQueue:(id<MTLCommandQueue>)commandQueue;
- (instancetype)initWithCommandBuffer:(id<MTLCommandBuffer>)commandBuffer;
@property(readonly, retain) id<MTLCommandBuffer> commandBuffer;
@property(readonly, retain) id<MTLCommandBuffer> rootCommandBuffer;
- (void)commitAndContinue;
@end

@interface MPSNDArrayDescriptor : NSObject
@property(readwrite) MPSDataType dataType;
@property(readonly) NSUInteger numberOfDimensions;
@property(readwrite) BOOL preferPackedRows;
+ (instancetype)descriptorWithDataType:(MPSDataType)dataType shape:(MPSShape*)shape;
+ (instancetype)descriptorWithDataType:(MPSDataType)dataType
                   dimensionCount:(NSUInteger)numberOfDimensions
                   dimensionSizes:(NSUInteger*)dimensionSizes;
- (NSUInteger)lengthOfDimension:(NSUInteger)dimensionIndex;
- (void)sliceDimension:(NSUInteger)dimensionIndex withSubrange:(MPSDimensionSlice)subRange;
- (void)transposeDimension:(NSUInteger)dimensionIndex withDimension:(NSUInteger)dimensionIndex2;
- (void)reshapeWithShape:(MPSShape*)shape;
- (MPSShape*)getShape;
@end

@interface MPSNDArray : NSObject
@property(readonly) MPSDataType dataType;
@property(readonly) NSUInteger numberOfDimensions;
@property(readonly, retain) id<MTLDevice> device;
- (instancetype)initWithDevice:(id<MTLDevice>)device descriptor:(MPSNDArrayDescriptor*)descriptor;
- (instancetype)initWithBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset descriptor:(MPSNDArrayDescriptor*)descriptor;
- (MPSNDArrayDescriptor*)descriptor;
- (NSUInteger)lengthOfDimension:(NSUInteger)dimensionIndex;
- (MPSNDArray*)arrayViewWithCommandBuffer:(id<MTLCommandBuffer>)cmdBuf
                               descriptor:(MPSNDArrayDescriptor*)descriptor
                                 aliasing:(NSUInteger)aliasing;
- (MPSNDArray*)arrayViewWithDescriptor:(MPSNDArrayDescriptor*)descriptor;
- (void)readBytes:(void*)buffer strideBytes:(NSInteger*)strideBytesPerDimension;
- (void)writeBytes:(void*)buffer strideBytes:(NSInteger*)strideBytesPerDimension;
- (void)exportDataWithCommandBuffer:(id<MTLCommandBuffer>)cmdBuf
                           toBuffer:(id<MTLBuffer>)buffer
                    destinationDataType:(MPSDataType)destinationDataType
                             offset:(NSUInteger)offset
                         rowStrides:(NSInteger*)rowStrides;
@property(readonly) id<MTLBuffer> userBuffer;
@end
static const NSUInteger MPSAliasingStrategyShallAlias = 1;
