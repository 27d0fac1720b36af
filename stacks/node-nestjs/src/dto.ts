import { Transform, TransformFnParams } from 'class-transformer';
import { IsInt, IsObject, IsOptional, IsString, Max, Min } from 'class-validator';

// A strictly decimal query-string integer: @Type(() => Number) would use Number(), which also
// accepts '1e3', ' 7', '+7' and '0x10'; anything not /^-?\d+$/ is left as it is (a string, an array
// for a repeated parameter, undefined) and fails @IsInt.
const DECIMAL = /^-?\d+$/;
function toStrictInt({ value }: TransformFnParams): unknown {
  return typeof value === 'string' && DECIMAL.test(value) ? Number(value) : value;
}

// Query strings arrive as strings: @Transform(toStrictInt) converts before the checks ("abc", "2.5",
// "" stay strings and fail @IsInt). Decorators apply bottom-up, so with stopAtFirstError the type
// check (closest to the property) runs first.
export class UsersQuery {
  @Transform(toStrictInt)
  @Max(10000)
  @Min(1)
  @IsInt()
  limit: number;
}

// _records is checked here; the other 15 are bound as text and PostgreSQL casts them to the
// function's parameter types (a value it rejects is SQLSTATE class 22 -> 400 in the filter).
export class PerfTestQuery {
  @Transform(toStrictInt)
  @Max(1000)
  @Min(1)
  @IsInt()
  _records: number;

  @IsString() _text: string;
  @IsString() _int: string;
  @IsString() _bigint: string;
  @IsString() _numeric: string;
  @IsString() _real: string;
  @IsString() _double: string;
  @IsString() _bool: string;
  @IsString() _date: string;
  @IsString() _timestamp: string;
  @IsString() _timestamptz: string;
  @IsString() _uuid: string;
  @IsString() _json: string;
  @IsString() _jsonb: string;
  @IsString() _int_array: string;
  @IsString() _text_array: string;
}

// JSON body: no @Transform, so "5", 1.5, null and true are rejected as they are.
export class TxBody {
  @Max(1000000) @Min(1) @IsInt() aid: number;
  @Max(100) @Min(1) @IsInt() tid: number;
  @Max(10) @Min(1) @IsInt() bid: number;
  @Max(5000) @Min(-5000) @IsInt() delta: number;
}

export class PerfNestedQuery {
  @Transform(toStrictInt)
  @Max(1000)
  @Min(1)
  @IsInt()
  _records: number;

  @Transform(toStrictInt)
  @Max(3)
  @Min(1)
  @IsInt()
  _depth: number;
}

export class PerfLargePayloadQuery {
  @Transform(toStrictInt)
  @Max(1024)
  @Min(1)
  @IsInt()
  _size_kb: number;
}

// JSON body, no conversion (like TxBody): "3", 1.5, null and true fail @IsInt; @IsObject rejects
// null, arrays and strings.
export class PerfPostBody {
  @Max(1000) @Min(1) @IsInt() _records: number;
  @IsObject() _payload: Record<string, unknown>;
}

// All optional (absent -> SQL NULL) and bound as text: PostgreSQL casts them to the function's types.
export class PerfManyParamsQuery {
  @IsOptional() @IsString() _p1?: string;
  @IsOptional() @IsString() _p2?: string;
  @IsOptional() @IsString() _p3?: string;
  @IsOptional() @IsString() _p4?: string;
  @IsOptional() @IsString() _p5?: string;
  @IsOptional() @IsString() _p6?: string;
  @IsOptional() @IsString() _p7?: string;
  @IsOptional() @IsString() _p8?: string;
  @IsOptional() @IsString() _p9?: string;
  @IsOptional() @IsString() _p10?: string;
  @IsOptional() @IsString() _p11?: string;
  @IsOptional() @IsString() _p12?: string;
  @IsOptional() @IsString() _p13?: string;
  @IsOptional() @IsString() _p14?: string;
  @IsOptional() @IsString() _p15?: string;
  @IsOptional() @IsString() _p16?: string;
  @IsOptional() @IsString() _p17?: string;
  @IsOptional() @IsString() _p18?: string;
  @IsOptional() @IsString() _p19?: string;
  @IsOptional() @IsString() _p20?: string;
}
