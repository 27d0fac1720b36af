import { Type } from 'class-transformer';
import { IsInt, IsString, Max, Min } from 'class-validator';

// Query strings arrive as strings: @Type(() => Number) converts before the checks
// ("abc" -> NaN and "2.5" fail @IsInt, "" -> 0 fails @Min). Decorators apply bottom-up, so with
// stopAtFirstError the type check (closest to the property) runs first.
export class UsersQuery {
  @Type(() => Number)
  @Max(10000)
  @Min(1)
  @IsInt()
  limit: number;
}

// _records is checked here; the other 15 are bound as text and PostgreSQL casts them to the
// function's parameter types (a value it rejects is SQLSTATE class 22 -> 400 in the filter).
export class PerfTestQuery {
  @Type(() => Number)
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

// JSON body: no @Type, so "5", 1.5, null and true are rejected as they are.
export class TxBody {
  @Max(1000000) @Min(1) @IsInt() aid: number;
  @Max(100) @Min(1) @IsInt() tid: number;
  @Max(10) @Min(1) @IsInt() bid: number;
  @Max(5000) @Min(-5000) @IsInt() delta: number;
}
