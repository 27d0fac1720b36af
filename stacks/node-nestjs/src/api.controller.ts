import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiService } from './api.service';
import { PerfTestQuery, TxBody, UsersQuery } from './dto';

@Controller()
export class ApiController {
  constructor(private readonly api: ApiService) {}

  @Get('static')
  static() {
    return { status: 'ok', timestamp: Date.now() };
  }

  @Get('users')
  users(@Query() query: UsersQuery) {
    return this.api.users(query.limit);
  }

  @Get('perf-test')
  perfTest(@Query() query: PerfTestQuery) {
    return this.api.perfTest(query);
  }

  @Post('tx')
  @HttpCode(200)
  tx(@Body() body: TxBody) {
    return this.api.tx(body);
  }
}
