// mpsgen's model of <MetalPerformanceShadersGraph/MetalPerformanceShadersGraph.h>: declarations
// only (see ../README.md).
#pragma once
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>

@class MPSGraph, MPSGraphOperation;

typedef NS_ENUM(uint64_t, MPSGraphOptions){
    MPSGraphOptionsNone = 0,
    MPSGraphOptionsSynchronizeResults = 1,
    MPSGraphOptionsVerbose = 2,
    MPSGraphOptionsDefault = MPSGraphOptionsSynchronizeResults,
};
typedef NS_ENUM(uint64_t, MPSGraphOptimization){
    MPSGraphOptimizationLevel0 = 0,
    MPSGraphOptimizationLevel1 = 1,
};
typedef NS_ENUM(NSUInteger, MPSGraphTensorNamedDataLayout){
    MPSGraphTensorNamedDataLayoutNCHW = 0,
    MPSGraphTensorNamedDataLayoutNHWC = 1,
};

@interface MPSGraphObject : NSObject
@end

@interface MPSGraphType : MPSGraphObject <NSCopying>
@end

@interface MPSGraphShapedType : MPSGraphType
@property(readwrite, copy) MPSShape* shape;
@property(readwrite) MPSDataType dataType;
- (instancetype)initWithShape:(MPSShape*)shape dataType:(MPSDataType)dataType;
@end

@interface MPSGraphTensor : MPSGraphObject <NSCopying>
@property(readonly, copy) MPSShape* shape;
@property(readonly) MPSDataType dataType;
@property(readonly) MPSGraphOperation* operation;
@end

@interface MPSGraphOperation : MPSGraphObject <NSCopying>
@property(readonly) NSArray<MPSGraphTensor*>* inputTensors;
@property(readonly) NSArray<MPSGraphTensor*>* outputTensors;
@property(readonly) MPSGraph* graph;
@property(readonly) NSString* name;
@end

@interface MPSGraphDevice : MPSGraphObject
+ (instancetype)deviceWithMTLDevice:(id<MTLDevice>)metalDevice;
@property(readonly) id<MTLDevice> metalDevice;
@end

@interface MPSGraphTensorData : MPSGraphObject
@property(readonly, copy) MPSShape* shape;
@property(readonly) MPSDataType dataType;
@property(readonly) MPSGraphDevice* device;
- (instancetype)initWithDevice:(MPSGraphDevice*)device
                          data:(NSData*)data
                         shape:(MPSShape*)shape
                      dataType:(MPSDataType)dataType;
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (instancetype)initWithMTLBuffer:(id<MTLBuffer>)buffer
                            shape:(MPSShape*)shape
                         dataType:(MPSDataType)dataType
                         rowBytes:(NSUInteger)rowBytes;
- (instancetype)initWithMPSNDArray:(MPSNDArray*)ndarray;
- (MPSNDArray*)mpsndarray;
@end

typedef NSDictionary<MPSGraphTensor*, MPSGraphTensorData*> MPSGraphTensorDataDictionary;
typedef NSDictionary<MPSGraphTensor*, MPSGraphShapedType*> MPSGraphTensorShapedTypeDictionary;

@interface MPSGraphCompilationDescriptor : MPSGraphObject <NSCopying>
@property(readwrite) MPSGraphOptimization optimizationLevel;
- (void)disableTypeInference;
@end

@interface MPSGraphExecutionDescriptor : MPSGraphObject
@property(readwrite) BOOL waitUntilCompleted;
@property(readwrite, copy) MPSGraphCompilationDescriptor* compilationDescriptor;
@end

@interface MPSGraphExecutableExecutionDescriptor : MPSGraphObject
@property(readwrite) BOOL waitUntilCompleted;
@end

@interface MPSGraphExecutable : MPSGraphObject
@property(readonly) NSArray<MPSGraphTensor*>* feedTensors;
@property(readonly) NSArray<MPSGraphTensor*>* targetTensors;
- (NSArray<MPSGraphTensorData*>*)encodeToCommandBuffer:(MPSCommandBuffer*)commandBuffer
                                           inputsArray:(NSArray<MPSGraphTensorData*>*)inputsArray
                                          resultsArray:(NSArray<MPSGraphTensorData*>*)resultsArray
                                   executionDescriptor:(MPSGraphExecutableExecutionDescriptor*)executionDescriptor;
@end

@interface MPSGraph : MPSGraphObject
+ (instancetype)new;
@property(readwrite) MPSGraphOptions options;
- (MPSGraphExecutable*)compileWithDevice:(MPSGraphDevice*)device
                                   feeds:(MPSGraphTensorShapedTypeDictionary*)feeds
                           targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                        targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations
                   compilationDescriptor:(MPSGraphCompilationDescriptor*)compilationDescriptor;
- (void)encodeToCommandBuffer:(MPSCommandBuffer*)commandBuffer
                        feeds:(MPSGraphTensorDataDictionary*)feeds
             targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations
            resultsDictionary:(MPSGraphTensorDataDictionary*)resultsDictionary
          executionDescriptor:(MPSGraphExecutionDescriptor*)executionDescriptor;
- (MPSGraphTensorDataDictionary*)runWithFeeds:(MPSGraphTensorDataDictionary*)feeds
                                targetTensors:(NSArray<MPSGraphTensor*>*)targetTensors
                             targetOperations:(NSArray<MPSGraphOperation*>*)targetOperations;
@end

// Placeholders and constants
@interface MPSGraph (MemoryOps)
- (MPSGraphTensor*)placeholderWithShape:(MPSShape*)shape dataType:(MPSDataType)dataType name:(NSString*)name;
- (MPSGraphTensor*)placeholderWithShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)constantWithScalar:(double)scalar dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithScalar:(double)scalar shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithRealPart:(double)realPart imaginaryPart:(double)imaginaryPart dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)constantWithData:(NSData*)data shape:(MPSShape*)shape dataType:(MPSDataType)dataType;
- (MPSGraphTensor*)variableWithData:(NSData*)data shape:(MPSShape*)shape dataType:(MPSDataType)dataType name:(NSString*)name;
@end

// Element-wise unary operations: - (MPSGraphTensor*)<op>WithTensor:(MPSGraphTensor*)tensor name:(NSString*)name
#define MPSGRAPH_MODEL_UNARY(op) -(MPSGraphTensor*)op##WithTensor : (MPSGraphTensor*)tensor name : (NSString*)name;
@interface MPSGraph (ArithmeticOps)
MPSGRAPH_MODEL_UNARY(identity)
MPSGRAPH_MODEL_UNARY(exponent)
MPSGRAPH_MODEL_UNARY(exponentBase2)
MPSGRAPH_MODEL_UNARY(exponentBase10)
MPSGRAPH_MODEL_UNARY(logarithm)
MPSGRAPH_MODEL_UNARY(logarithmBase2)
MPSGRAPH_MODEL_UNARY(logarithmBase10)
MPSGRAPH_MODEL_UNARY(square)
MPSGRAPH_MODEL_UNARY(squareRoot)
MPSGRAPH_MODEL_UNARY(reciprocalSquareRoot)
MPSGRAPH_MODEL_UNARY(reverseSquareRoot)
MPSGRAPH_MODEL_UNARY(reciprocal)
MPSGRAPH_MODEL_UNARY(absolute)
MPSGRAPH_MODEL_UNARY(absoluteSquare)
MPSGRAPH_MODEL_UNARY(negative)
MPSGRAPH_MODEL_UNARY(sign)
MPSGRAPH_MODEL_UNARY(signbit)
MPSGRAPH_MODEL_UNARY(ceil)
MPSGRAPH_MODEL_UNARY(floor)
MPSGRAPH_MODEL_UNARY(round)
MPSGRAPH_MODEL_UNARY(rint)
MPSGRAPH_MODEL_UNARY(truncate)
MPSGRAPH_MODEL_UNARY(sin)
MPSGRAPH_MODEL_UNARY(cos)
MPSGRAPH_MODEL_UNARY(tan)
MPSGRAPH_MODEL_UNARY(sinh)
MPSGRAPH_MODEL_UNARY(cosh)
MPSGRAPH_MODEL_UNARY(tanh)
MPSGRAPH_MODEL_UNARY(asin)
MPSGRAPH_MODEL_UNARY(acos)
MPSGRAPH_MODEL_UNARY(atan)
MPSGRAPH_MODEL_UNARY(asinh)
MPSGRAPH_MODEL_UNARY(acosh)
MPSGRAPH_MODEL_UNARY(atanh)
MPSGRAPH_MODEL_UNARY(not)
MPSGRAPH_MODEL_UNARY(isInfinite)
MPSGRAPH_MODEL_UNARY(isFinite)
MPSGRAPH_MODEL_UNARY(isNaN)
MPSGRAPH_MODEL_UNARY(erf)
MPSGRAPH_MODEL_UNARY(bitwiseNOT)
MPSGRAPH_MODEL_UNARY(conjugate)
MPSGRAPH_MODEL_UNARY(realPartOf)
MPSGRAPH_MODEL_UNARY(imaginaryPartOf)
MPSGRAPH_MODEL_UNARY(sigmoid)
MPSGRAPH_MODEL_UNARY(reLU)
MPSGRAPH_MODEL_UNARY(shape)
@end
#undef MPSGRAPH_MODEL_UNARY

// Element-wise binary operations:
// - (MPSGraphTensor*)<op>WithPrimaryTensor:(MPSGraphTensor*)primaryTensor secondaryTensor:(MPSGraphTensor*)secondaryTensor name:(NSString*)name
#define MPSGRAPH_MODEL_BINARY(op)                                                                         \
  -(MPSGraphTensor*)op##WithPrimaryTensor : (MPSGraphTensor*)primaryTensor secondaryTensor                \
      : (MPSGraphTensor*)secondaryTensor name : (NSString*)name;
@interface MPSGraph (ArithmeticBinaryOps)
MPSGRAPH_MODEL_BINARY(addition)
MPSGRAPH_MODEL_BINARY(subtraction)
MPSGRAPH_MODEL_BINARY(multiplication)
MPSGRAPH_MODEL_BINARY(division)
MPSGRAPH_MODEL_BINARY(divisionNoNaN)
MPSGRAPH_MODEL_BINARY(modulo)
MPSGRAPH_MODEL_BINARY(floorModulo)
MPSGRAPH_MODEL_BINARY(power)
MPSGRAPH_MODEL_BINARY(minimum)
MPSGRAPH_MODEL_BINARY(maximum)
MPSGRAPH_MODEL_BINARY(minimumWithNaNPropagation)
MPSGRAPH_MODEL_BINARY(maximumWithNaNPropagation)
MPSGRAPH_MODEL_BINARY(equal)
MPSGRAPH_MODEL_BINARY(notEqual)
MPSGRAPH_MODEL_BINARY(lessThan)
MPSGRAPH_MODEL_BINARY(lessThanOrEqualTo)
MPSGRAPH_MODEL_BINARY(greaterThan)
MPSGRAPH_MODEL_BINARY(greaterThanOrEqualTo)
MPSGRAPH_MODEL_BINARY(logicalAND)
MPSGRAPH_MODEL_BINARY(logicalOR)
MPSGRAPH_MODEL_BINARY(logicalNAND)
MPSGRAPH_MODEL_BINARY(logicalNOR)
MPSGRAPH_MODEL_BINARY(logicalXOR)
MPSGRAPH_MODEL_BINARY(logicalXNOR)
MPSGRAPH_MODEL_BINARY(atan2)
MPSGRAPH_MODEL_BINARY(bitwiseAND)
MPSGRAPH_MODEL_BINARY(bitwiseOR)
MPSGRAPH_MODEL_BINARY(bitwiseXOR)
MPSGRAPH_MODEL_BINARY(bitwiseLeftShift)
MPSGRAPH_MODEL_BINARY(bitwiseRightShift)
MPSGRAPH_MODEL_BINARY(matrixMultiplication)
@end
#undef MPSGRAPH_MODEL_BINARY

@interface MPSGraph (SelectAndCastOps)
- (MPSGraphTensor*)selectWithPredicateTensor:(MPSGraphTensor*)predicateTensor
                         truePredicateTensor:(MPSGraphTensor*)truePredicateTensor
                        falsePredicateTensor:(MPSGraphTensor*)falseSelectTensor
                                        name:(NSString*)name;
- (MPSGraphTensor*)clampWithTensor:(MPSGraphTensor*)tensor
                    minValueTensor:(MPSGraphTensor*)minValueTensor
                    maxValueTensor:(MPSGraphTensor*)maxValueTensor
                              name:(NSString*)name;
- (MPSGraphTensor*)castTensor:(MPSGraphTensor*)tensor toType:(MPSDataType)type name:(NSString*)name;
- (MPSGraphTensor*)reinterpretCastTensor:(MPSGraphTensor*)tensor toType:(MPSDataType)type name:(NSString*)name;
- (MPSGraphTensor*)reshapeTensor:(MPSGraphTensor*)tensor withShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)reshapeTensor:(MPSGraphTensor*)tensor withShapeTensor:(MPSGraphTensor*)shapeTensor name:(NSString*)name;
- (MPSGraphTensor*)expandDimsOfTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)broadcastTensor:(MPSGraphTensor*)tensor toShape:(MPSShape*)shape name:(NSString*)name;
- (MPSGraphTensor*)reductionSumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionSumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionMaximumWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)reductionMinimumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionProductWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)reductionProductWithTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)meanOfTensor:(MPSGraphTensor*)tensor axes:(NSArray<NSNumber*>*)axes name:(NSString*)name;
- (MPSGraphTensor*)cumulativeSumWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
- (MPSGraphTensor*)transposeTensor:(MPSGraphTensor*)tensor
                         dimension:(NSUInteger)dimensionIndex
                     withDimension:(NSUInteger)dimensionIndex2
                              name:(NSString*)name;
- (MPSGraphTensor*)sliceTensor:(MPSGraphTensor*)tensor
                     dimension:(NSUInteger)dimensionIndex
                         start:(NSInteger)start
                        length:(NSInteger)length
                          name:(NSString*)name;
- (MPSGraphTensor*)concatTensors:(NSArray<MPSGraphTensor*>*)tensors dimension:(NSInteger)dimensionIndex name:(NSString*)name;
- (MPSGraphTensor*)complexTensorWithRealTensor:(MPSGraphTensor*)realTensor
                               imaginaryTensor:(MPSGraphTensor*)imaginaryTensor
                                          name:(NSString*)name;
- (MPSGraphTensor*)softMaxWithTensor:(MPSGraphTensor*)tensor axis:(NSInteger)axis name:(NSString*)name;
@end
