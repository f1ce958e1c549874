// mpsgen's model of <Foundation/Foundation.h>: declarations only (see ../README.md).
#pragma once
#include <dispatch/dispatch.h>
#include <stddef.h>
#include <stdint.h>

typedef long NSInteger;
typedef unsigned long NSUInteger;
typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define NSNotFound ((NSInteger)0x7fffffffffffffffL)
#define NS_ENUM(_type, _name) enum _name : _type _name; enum _name : _type
#define NS_OPTIONS(_type, _name) enum _name : _type _name; enum _name : _type
#define API_AVAILABLE(...)
#define API_UNAVAILABLE(...)
#define NS_SWIFT_NAME(...)
#define NS_RETURNS_RETAINED __attribute__((ns_returns_retained))
#define NS_RETURNS_INNER_POINTER __attribute__((objc_returns_inner_pointer))

#define nil nullptr
#define Nil nullptr

// Darwin's <time.h> extension, which Apple's headers bring along with Foundation
#include <time.h>
#define CLOCK_UPTIME_RAW ((clockid_t)8)
extern "C" uint64_t clock_gettime_nsec_np(clockid_t clock_id);

typedef struct _NSRange {
  NSUInteger location;
  NSUInteger length;
} NSRange;

@class NSString, NSArray<ObjectType>, NSDictionary<KeyType, ObjectType>, NSError, NSMethodSignature;

@protocol NSObject
- (BOOL)isEqual:(id)object;
@property(readonly) NSUInteger hash;
- (instancetype)retain;
- (oneway void)release;
- (instancetype)autorelease;
@property(readonly) NSUInteger retainCount;
- (BOOL)respondsToSelector:(SEL)aSelector;
- (BOOL)isKindOfClass:(Class)aClass;
@property(readonly, copy) NSString* description;
@end

@protocol NSCopying
- (id)copyWithZone:(void*)zone;
@end

@protocol NSFastEnumeration
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
- (id)copy;
- (id)mutableCopy;
+ (Class)class;
- (Class)class;
@end

@interface NSString : NSObject <NSCopying>
@property(readonly) NSUInteger length;
@property(readonly) const char* UTF8String NS_RETURNS_INNER_POINTER;
+ (instancetype)stringWithUTF8String:(const char*)nullTerminatedCString;
+ (instancetype)stringWithCString:(const char*)cString encoding:(NSUInteger)enc;
+ (instancetype)stringWithFormat:(NSString*)format, ...;
- (instancetype)initWithUTF8String:(const char*)nullTerminatedCString;
- (BOOL)isEqualToString:(NSString*)aString;
- (NSString*)stringByAppendingString:(NSString*)aString;
- (const char*)cStringUsingEncoding:(NSUInteger)encoding;
@end
static const NSUInteger NSASCIIStringEncoding = 1;
static const NSUInteger NSUTF8StringEncoding = 4;

@interface NSMutableString : NSString
- (void)appendString:(NSString*)aString;
@end

@interface NSNumber : NSObject <NSCopying>
+ (NSNumber*)numberWithChar:(char)value;
+ (NSNumber*)numberWithUnsignedChar:(unsigned char)value;
+ (NSNumber*)numberWithShort:(short)value;
+ (NSNumber*)numberWithInt:(int)value;
+ (NSNumber*)numberWithUnsignedInt:(unsigned int)value;
+ (NSNumber*)numberWithLong:(long)value;
+ (NSNumber*)numberWithUnsignedLong:(unsigned long)value;
+ (NSNumber*)numberWithLongLong:(long long)value;
+ (NSNumber*)numberWithUnsignedLongLong:(unsigned long long)value;
+ (NSNumber*)numberWithFloat:(float)value;
+ (NSNumber*)numberWithDouble:(double)value;
+ (NSNumber*)numberWithBool:(BOOL)value;
+ (NSNumber*)numberWithInteger:(NSInteger)value;
+ (NSNumber*)numberWithUnsignedInteger:(NSUInteger)value;
@property(readonly) int intValue;
@property(readonly) long longValue;
@property(readonly) long long longLongValue;
@property(readonly) unsigned long unsignedLongValue;
@property(readonly) float floatValue;
@property(readonly) double doubleValue;
@property(readonly) BOOL boolValue;
@property(readonly) NSInteger integerValue;
@property(readonly) NSUInteger unsignedIntegerValue;
@end

@interface NSValue : NSObject <NSCopying>
@end

@interface NSArray<__covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
- (ObjectType)objectAtIndex:(NSUInteger)index;
- (ObjectType)objectAtIndexedSubscript:(NSUInteger)idx;
+ (instancetype)array;
+ (instancetype)arrayWithObject:(ObjectType)anObject;
+ (instancetype)arrayWithObjects:(const ObjectType[])objects count:(NSUInteger)cnt;
+ (instancetype)arrayWithObjects:(ObjectType)firstObj, ...;
+ (instancetype)arrayWithArray:(NSArray<ObjectType>*)array;
- (instancetype)initWithObjects:(const ObjectType[])objects count:(NSUInteger)cnt;
- (NSArray<ObjectType>*)arrayByAddingObject:(ObjectType)anObject;
- (NSArray<ObjectType>*)arrayByAddingObjectsFromArray:(NSArray<ObjectType>*)otherArray;
@property(readonly) ObjectType firstObject;
@property(readonly) ObjectType lastObject;
@end

@interface NSMutableArray<ObjectType> : NSArray<ObjectType>
+ (instancetype)arrayWithCapacity:(NSUInteger)numItems;
- (instancetype)initWithCapacity:(NSUInteger)numItems;
- (void)addObject:(ObjectType)anObject;
- (void)addObjectsFromArray:(NSArray<ObjectType>*)otherArray;
- (void)insertObject:(ObjectType)anObject atIndex:(NSUInteger)index;
- (void)removeObjectAtIndex:(NSUInteger)index;
- (void)removeAllObjects;
- (void)setObject:(ObjectType)obj atIndexedSubscript:(NSUInteger)idx;
@end

@interface NSDictionary<KeyType, __covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
- (ObjectType)objectForKey:(KeyType)aKey;
- (ObjectType)objectForKeyedSubscript:(KeyType)key;
+ (instancetype)dictionary;
+ (instancetype)dictionaryWithObjects:(const ObjectType[])objects forKeys:(const id<NSCopying>[])keys count:(NSUInteger)cnt;
+ (instancetype)dictionaryWithObject:(ObjectType)object forKey:(KeyType<NSCopying>)key;
+ (instancetype)dictionaryWithObjects:(NSArray<ObjectType>*)objects forKeys:(NSArray<KeyType<NSCopying>>*)keys;
@property(readonly, copy) NSArray<KeyType>* allKeys;
@end

@interface NSMutableDictionary<KeyType, ObjectType> : NSDictionary<KeyType, ObjectType>
+ (instancetype)dictionaryWithCapacity:(NSUInteger)numItems;
- (instancetype)initWithCapacity:(NSUInteger)numItems;
- (void)setObject:(ObjectType)anObject forKey:(KeyType<NSCopying>)aKey;
- (void)setObject:(ObjectType)obj forKeyedSubscript:(KeyType<NSCopying>)key;
- (void)removeObjectForKey:(KeyType)aKey;
@end

@interface NSError : NSObject <NSCopying>
@property(readonly) NSInteger code;
@property(readonly, copy) NSString* domain;
@property(readonly, copy) NSString* localizedDescription;
@end

@interface NSData : NSObject <NSCopying>
@property(readonly) const void* bytes;
@property(readonly) NSUInteger length;
@end

@interface NSURL : NSObject <NSCopying>
+ (instancetype)fileURLWithPath:(NSString*)path;
@end

@interface NSProcessInfo : NSObject
@property(class, readonly, strong) NSProcessInfo* processInfo;
@end

@interface NSAutoreleasePool : NSObject
- (void)drain;
@end

// @"..." literals: clang's default constant string class for a non-Apple runtime
@interface NSConstantString : NSString
@end
@interface NXConstantString : NSString
@end

extern "C" void NSLog(NSString* format, ...);
